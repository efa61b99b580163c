import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

declare module 'vitest' {
  export interface ProvidedContext {
    /** Deno's cache folder for this run, warmed once, shared by every test file's server. */
    denoDir: string
  }
}

/** globalSetup of vitest.deno.config.ts: one DENO_DIR for the run, with the entry's modules cached. */
export default function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), 'deno-suite-'))
  execFileSync(join(ROOT, 'node_modules/.bin/deno'), ['cache', 'src/runtime/deno.ts'], {
    cwd: ROOT,
    stdio: 'pipe',
    timeout: 180_000,
    env: { PATH: process.env.PATH, HOME: dir, DENO_DIR: dir, NO_COLOR: '1' },
  })
  mkdirSync(join(dir, 'servers'))
  project.provide('denoDir', dir)
  return () => {
    // The servers test files started (tests/helpers/remote/deno.ts lists each pid), if still running.
    for (const pid of readdirSync(join(dir, 'servers'))) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {
        // already stopped
      }
    }
    rmSync(dir, { recursive: true, force: true })
  }
}
