import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { createApp } from '../../src/app.ts'
import { buildDeps } from '../../src/deps.ts'
import { createLogger } from '../../src/lib/logger.ts'
import { signToken } from '../../src/lib/tokens.ts'
import { sha256Hex } from '../../src/runtime/node-crypto.ts'
import { nodeFileStore } from '../../src/runtime/node-files.ts'
import { openDatabase } from '../../src/runtime/node-primitives.ts'
import { BENCH_SECRET, benchConfig } from './temp-dir.ts'

/**
 * The service in the bench's own process (bench:views, bench:fhir:group): a libSQL file `database`
 * in `dir`, a memory cache (`storage`, which a bench may empty), files under `dir`, and `call` /
 * `json`, which send a request through `app.request()` with a token of tenant and user `bench`
 * and throw on an error answer.
 */
export async function inProcessService(dir: string, database: string) {
  const config = benchConfig(dir, database)
  const { db } = await openDatabase(config)
  const storage = createStorage({ driver: memoryDriver() })
  const deps = await buildDeps(config, { db, storage, files: nodeFileStore(dir), sha256Hex, log: createLogger('error') })
  const app = createApp(() => deps)
  const token = await signToken(BENCH_SECRET, { tenantId: 'bench', userId: 'bench' })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`)
    return res
  }
  const json = async (method: string, path: string, body?: unknown) => (await call(method, path, body)).json()
  return { config, db, storage, deps, app, token, call, json }
}
