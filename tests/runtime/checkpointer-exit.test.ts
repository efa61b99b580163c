import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

/**
 * A process that opened the database (and with it the WAL checkpointing worker) and never closed
 * it still exits when its work is done: the worker must not hold the event loop. A host that
 * embeds the service and opens the database itself, or a script, would otherwise hang.
 */

const CHECKOUT = new URL('../../', import.meta.url).pathname
let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

describe('the WAL checkpointing worker', () => {
  it('lets a process that never stopped it exit', async () => {
    dir = mkdtempSync(join(tmpdir(), 'panels-checkpointer-exit-'))
    const script = `
      import { parseConfig } from '${CHECKOUT}src/config.ts'
      import { openDatabase } from '${CHECKOUT}src/runtime/node-primitives.ts'
      const { client, checkpointer } = await openDatabase(parseConfig({ NODE_ENV: 'test', DATABASE_URL: 'file:${dir}/panels.db' }))
      await client.execute('SELECT 1')
      console.log(checkpointer ? 'worker' : 'no worker')`
    writeFileSync(join(dir, 'open.mjs'), script)
    const child = spawn(process.execPath, ['--import', `${CHECKOUT}node_modules/tsx/dist/loader.mjs`, join(dir, 'open.mjs')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => {
      out += String(d)
    })
    child.stderr.on('data', (d) => {
      out += String(d)
    })
    const code = await new Promise<number | 'hung'>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        resolve('hung')
      }, 20_000)
      child.once('exit', (c) => {
        clearTimeout(timer)
        resolve(c ?? -1)
      })
    })
    expect(out.trim()).toBe('worker')
    expect(code).toBe(0)
  }, 30_000)
})
