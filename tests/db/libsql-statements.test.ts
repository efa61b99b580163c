import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Client, createClient } from '@libsql/client'
import { afterEach, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/config.ts'
import { cacheLibsqlStatements, installStatementCache, MAX_STATEMENTS } from '../../src/runtime/libsql-statements.ts'
import { openDatabase } from '../../src/runtime/node-primitives.ts'

let dir: string | undefined
const clients: Client[] = []
afterEach(() => {
  for (const c of clients.splice(0)) c.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

/** A stand-in for libsql's Database that counts what reaches the native side. */
function fakeDatabase() {
  const prepared: string[] = []
  let rawCalls = 0
  let columnCalls = 0
  class Database {
    closed = false
    prepare(sql: string) {
      prepared.push(sql)
      return {
        sql,
        raw(_toggle?: boolean) {
          rawCalls++
          if (sql.startsWith('INSERT')) throw new Error('not a reader')
          return this
        },
        columns() {
          columnCalls++
          return [{ name: 'n' }]
        },
      }
    }
    close() {
      this.closed = true
    }
  }
  return { Database, prepared, rawCalls: () => rawCalls, columnCalls: () => columnCalls }
}

describe('cached prepared statements (the libsql connection)', () => {
  it('prepares a text once per connection, and once more after the connection closes', () => {
    const fake = fakeDatabase()
    expect(installStatementCache(fake.Database)).toBe(true)
    expect(installStatementCache(fake.Database)).toBe(true) // idempotent: not wrapped twice
    const a = new fake.Database()
    const b = new fake.Database()
    const first = a.prepare('SELECT 1')
    expect(a.prepare('SELECT 1')).toBe(first)
    expect(b.prepare('SELECT 1')).not.toBe(first)
    expect(fake.prepared).toEqual(['SELECT 1', 'SELECT 1'])
    a.close()
    expect(a.closed).toBe(true)
    expect(a.prepare('SELECT 1')).not.toBe(first)
    expect(fake.prepared).toHaveLength(3)
  })

  it('never caches a text with `*` result columns, but does cache count(*)', () => {
    const fake = fakeDatabase()
    installStatementCache(fake.Database)
    const db = new fake.Database()
    db.prepare('SELECT * FROM t')
    db.prepare('SELECT * FROM t')
    db.prepare('SELECT count(*) FROM t')
    db.prepare('SELECT count(*) FROM t')
    expect(fake.prepared).toEqual(['SELECT * FROM t', 'SELECT * FROM t', 'SELECT count(*) FROM t'])
  })

  it('keeps the most recently used statements up to its bound', () => {
    const fake = fakeDatabase()
    installStatementCache(fake.Database)
    const db = new fake.Database()
    const kept = db.prepare('SELECT 0')
    for (let i = 1; i <= MAX_STATEMENTS; i++) {
      db.prepare(`SELECT ${i}`)
      if (i % 100 === 0) expect(db.prepare('SELECT 0')).toBe(kept) // used again: stays
    }
    expect(db.prepare('SELECT 0')).toBe(kept)
    expect(fake.prepared).toHaveLength(MAX_STATEMENTS + 1)
    // SELECT 1 was the least recently used: dropped when the cache overflowed, prepared again now.
    db.prepare('SELECT 1')
    expect(fake.prepared).toHaveLength(MAX_STATEMENTS + 2)
  })

  it('asks the native side once whether a statement returns rows, and its columns', () => {
    const fake = fakeDatabase()
    installStatementCache(fake.Database)
    const db = new fake.Database()
    for (let i = 0; i < 3; i++) expect(() => db.prepare('INSERT INTO t VALUES (1)').raw(true)).toThrow('not a reader')
    for (let i = 0; i < 3; i++) db.prepare('SELECT 1').raw(true)
    expect(fake.rawCalls()).toBe(4)
    for (let i = 0; i < 3; i++) expect(db.prepare('SELECT 1').columns()).toEqual([{ name: 'n' }])
    expect(fake.columnCalls()).toBe(1)
  })

  it('answers rightly through the real client: arguments, write results, a failed write, another connection’s changes', async () => {
    expect(cacheLibsqlStatements()).toBe(true)
    dir = mkdtempSync(join(tmpdir(), 'panels-statements-'))
    const url = `file:${join(dir, 'db.sqlite')}`
    const client = createClient({ url, concurrency: 1 })
    const other = createClient({ url, concurrency: 1 })
    clients.push(client, other)
    await client.execute('PRAGMA journal_mode = WAL')
    await client.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)')
    const insert = (v: string) => client.execute({ sql: 'INSERT INTO t (v) VALUES (?)', args: [v] })
    const read = async (from: number) =>
      (await client.execute({ sql: 'SELECT id, v FROM t WHERE id >= ? ORDER BY id', args: [from] })).rows.map((r) => [
        Number(r.id),
        r.v,
      ])
    expect(Number((await insert('a')).lastInsertRowid)).toBe(1)
    expect((await insert('b')).rowsAffected).toBe(1)
    await expect(insert('a')).rejects.toThrow(/UNIQUE/)
    expect(Number((await insert('c')).lastInsertRowid)).toBe(3)
    expect(await read(1)).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ])
    expect(await read(3)).toEqual([[3, 'c']])
    // Another connection writes, changes the schema and checkpoints the WAL to its start: a cached
    // statement holds no read lock between runs, and is prepared again by SQLite after the change.
    await other.execute("INSERT INTO t (v) VALUES ('d')")
    await other.execute('ALTER TABLE t ADD COLUMN w TEXT')
    await other.execute('CREATE INDEX t_w ON t (w)')
    const checkpoint = await other.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    expect(Number(checkpoint.rows[0][0])).toBe(0) // not busy
    expect(await read(3)).toEqual([
      [3, 'c'],
      [4, 'd'],
    ])
    // In a batch (one transaction) too, and a rolled-back batch leaves the statements usable.
    await expect(
      client.batch([
        { sql: 'INSERT INTO t (v) VALUES (?)', args: ['e'] },
        { sql: 'INSERT INTO t (v) VALUES (?)', args: ['a'] },
      ]),
    ).rejects.toThrow(/UNIQUE/)
    await client.batch([{ sql: 'INSERT INTO t (v) VALUES (?)', args: ['e'] }])
    expect((await read(4)).map(([, v]) => v)).toEqual(['d', 'e'])
  })

  it('answers concurrent statements of the same text on a database the service opens', async () => {
    dir = mkdtempSync(join(tmpdir(), 'panels-statements-'))
    const { client, checkpointer } = await openDatabase(
      parseConfig({ NODE_ENV: 'test', DATABASE_URL: `file:${join(dir, 'panels.db')}` }),
    )
    try {
      const rows = await Promise.all([1, 2, 3].map((n) => client.execute({ sql: 'SELECT ? AS n', args: [n] })))
      expect(rows.map((r) => Number(r.rows[0].n))).toEqual([1, 2, 3])
    } finally {
      await checkpointer?.stop()
      client.close()
    }
  })
})
