import { realpath } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { createClient } from '@libsql/client'
import { FileAccessError, relativePathProblem } from '../lib/files.ts'
import type { OpenSqlite, SqlResult } from '../lib/sql.ts'

/**
 * SQLite/libSQL databases for the `database` connector on Node (and Deno through npm:): files
 * under `root` (FILES_DIR, symlinks followed and kept inside it) opened with one connection and
 * `PRAGMA query_only = ON`, remote libSQL servers by URL; every query runs in a read-only
 * transaction (`BEGIN TRANSACTION READONLY`).
 */
export function nodeSqliteOpener(root?: string): OpenSqlite {
  return async (target) => {
    const url = target.path !== undefined ? `file:${await resolveInside(root, target.path)}` : target.url
    if (!url) throw new Error('An SQLite target needs a path or a URL')
    const client = createClient({ url, authToken: target.authToken, intMode: 'bigint', concurrency: 1 })
    try {
      if (target.path !== undefined) await client.execute('PRAGMA query_only = ON')
    } catch (err) {
      client.close()
      throw err
    }
    return {
      async query(sql, args = []) {
        const [rs] = await client.batch([{ sql, args }], 'read')
        const result: SqlResult = { columns: [...rs.columns], rows: [] }
        for (const row of rs.rows) {
          const out: Record<string, unknown> = {}
          rs.columns.forEach((name, i) => {
            out[name] = jsonValue(row[i])
          })
          result.rows.push(out)
        }
        return result
      },
      close: () => client.close(),
    }
  }
}

async function resolveInside(root: string | undefined, path: string): Promise<string> {
  if (root === undefined) throw new FileAccessError('invalid_path', 'SQLite files need FILES_DIR, which is not configured')
  const problem = relativePathProblem(path)
  if (problem) throw new FileAccessError('invalid_path', `File path '${path}' ${problem}`)
  const base = await realpath(root)
  let real: string
  try {
    real = await realpath(join(base, path))
  } catch {
    throw new FileAccessError('not_found', `File '${path}' does not exist in the files folder`)
  }
  const rel = relative(base, real)
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep)) {
    throw new FileAccessError('outside_root', `File path '${path}' leads outside the files folder`)
  }
  return real
}

/** libSQL values as JSON: safe integers as numbers, larger ones as strings, blobs as base64. */
function jsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(value) : String(value)
  }
  if (value instanceof ArrayBuffer) return Buffer.from(value).toString('base64')
  return value
}
