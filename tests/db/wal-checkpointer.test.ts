import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/config.ts'
import { openDatabase } from '../../src/runtime/node-primitives.ts'
import { FALLBACK_PAGES } from '../../src/runtime/wal-checkpointer.ts'

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('WAL checkpoints on a worker thread', () => {
  it('copies the WAL into the database file while the service’s connection never checkpoints by itself', async () => {
    dir = mkdtempSync(join(tmpdir(), 'panels-checkpoint-'))
    const file = join(dir, 'panels.db')
    const { client, checkpointer } = await openDatabase(parseConfig({ NODE_ENV: 'test', DATABASE_URL: `file:${file}` }))
    try {
      expect(checkpointer).toBeDefined()
      const [row] = (await client.execute('PRAGMA wal_autocheckpoint')).rows
      expect(Number(row[0])).toBe(FALLBACK_PAGES)
      // Wait for the migrations' pages to be copied, then write well under the fallback's pages.
      await sleep(1500)
      const before = statSync(file).size
      await client.execute('CREATE TABLE filler (id INTEGER PRIMARY KEY, text TEXT)')
      for (let i = 0; i < 20; i++) {
        await client.execute({
          sql: "INSERT INTO filler (text) SELECT printf('%.4000c', 'x') FROM json_each(?)",
          args: [JSON.stringify(Array(50).fill(0))],
        })
      }
      // ~1,000 pages of 4 KiB: only a checkpoint puts them into the database file.
      let after = statSync(file).size
      for (let waited = 0; after < before + 2_000_000 && waited < 5000; waited += 100) {
        await sleep(100)
        after = statSync(file).size
      }
      expect(after).toBeGreaterThan(before + 2_000_000)
      const stats = await checkpointer!.stats()
      expect(stats.rounds).toBeGreaterThan(0)
      expect(stats.copying).toBeGreaterThan(0)
      // The service reads what it wrote, whichever file holds it.
      const [count] = (await client.execute('SELECT count(*) AS n FROM filler')).rows
      expect(Number(count.n)).toBe(1000)
    } finally {
      await checkpointer?.stop()
      client.close()
    }
  })
})
