import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/config.ts'
import { openDatabase } from '../../src/runtime/node-primitives.ts'

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

describe('openDatabase on a file', () => {
  it('gives concurrent statements the same tuning: no connection of the pool goes without it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'panels-open-'))
    const { client, checkpointer } = await openDatabase(
      parseConfig({ NODE_ENV: 'test', DATABASE_URL: `file:${join(dir, 'panels.db')}` }),
    )
    try {
      const read = (pragma: string) =>
        Promise.all(Array.from({ length: 6 }, () => client.execute(`PRAGMA ${pragma}`).then((rs) => Number(rs.rows[0][0]))))
      expect(await read('synchronous')).toEqual(Array(6).fill(1)) // NORMAL
      expect(await read('busy_timeout')).toEqual(Array(6).fill(5000))
      expect(await read('cache_size')).toEqual(Array(6).fill(-8192))
      expect(await read('temp_store')).toEqual(Array(6).fill(1)) // FILE
      expect(await read('foreign_keys')).toEqual(Array(6).fill(1))
    } finally {
      await checkpointer?.stop()
      client.close()
    }
  })
})
