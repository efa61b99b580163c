import { fileURLToPath } from 'node:url'
import { describe } from 'vitest'
import { servedRuntime, startService } from './processes.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// `deno task start` exactly as a user runs it (Deno from the npm package `deno`), from the project
// root; the data folder and port come from the environment.
describe('Deno: deno task start (src/runtime/deno.ts)', () => {
  servedRuntime(
    // HOME (Deno's cache folder) in the temp folder, so nothing is written into the project.
    (dir, _port, env) =>
      startService(`${ROOT}node_modules/.bin/deno`, ['task', 'start'], { cwd: ROOT, env: { ...env, HOME: dir, NO_COLOR: '1' } }),
    120_000,
  )
})
