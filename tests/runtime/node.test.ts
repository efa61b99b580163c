import { fileURLToPath } from 'node:url'
import { describe } from 'vitest'
import { servedRuntime, startService } from './processes.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

describe('Node: tsx src/runtime/node.ts (npm start)', () => {
  servedRuntime((dir, _port, env) =>
    startService(process.execPath, ['--import', `${ROOT}node_modules/tsx/dist/loader.mjs`, `${ROOT}src/runtime/node.ts`], {
      cwd: dir,
      env: { ...env, TSX_TSCONFIG_PATH: `${ROOT}tsconfig.json` },
    }),
  )
})
