import type { Storage } from 'unstorage'

export interface CacheOptions {
  /** Lifetime in seconds when a `set` names none (spec §8: 3600). */
  defaultTtl?: number
  now?: () => number
}

interface Entry<T> {
  value: T
  expiresAt: number
}

/**
 * The service cache over any unstorage driver. It keeps its own expiry (the memory driver ignores
 * `ttl`, KV clamps it to ≥ 60 s), and every key lives under its tenant, so one tenant's entry can
 * never be read with another tenant's key.
 *
 * Staleness guard: `wrap` notes the write epoch of a key before loading and stores the loaded
 * value only when no `del` of that key happened meanwhile in this process, so a read racing a
 * write cannot put the old value back after the writer invalidated it.
 */
export function createCache(storage: Storage, options: CacheOptions = {}) {
  const defaultTtl = options.defaultTtl ?? 3600
  const now = options.now ?? Date.now
  // Write epochs in a fixed number of slots: bounded memory; a collision only skips one store.
  const epochs = new Uint32Array(4096)
  const slot = (k: string) => {
    let h = 2166136261
    for (let i = 0; i < k.length; i++) h = Math.imul(h ^ k.charCodeAt(i), 16777619)
    return (h >>> 0) % epochs.length
  }
  // unstorage rewrites keys (drops a `?…` suffix, `/` → `:`), so those characters are escaped to
  // keep distinct keys distinct; `%` too, so an escape cannot collide with a literal.
  const fullKey = (tenantId: string, key: string) =>
    `t:${encodeURIComponent(tenantId)}:${key.replace(/[?/\\%]/g, encodeURIComponent)}`

  // unstorage's memory driver is reached directly: the same Map and normalised keys, minus its
  // per-call layers (key checks, mount lookup, promise wrapping, destr). It holds each entry as
  // the deep-frozen result of a JSON round trip, the value any other driver would give back, so
  // a hit costs no parse, and a caller that tried to change a cached value would fail loudly
  // (TypeError) instead of changing what the next reader gets. Other drivers (Redis, fs, KV) go
  // through unstorage.
  const memory = memoryMapOf(storage)

  async function read(k: string): Promise<unknown> {
    if (!memory) return storage.getItem(k)
    const raw = memory.get(normalizeKey(k))
    return typeof raw === 'string' ? JSON.parse(raw) : (raw ?? null)
  }

  async function get<T>(tenantId: string, key: string): Promise<T | undefined> {
    const k = fullKey(tenantId, key)
    const entry = (await read(k)) as Entry<T> | null
    if (!entry || typeof entry !== 'object' || !('expiresAt' in entry)) return undefined
    if (entry.expiresAt <= now()) {
      await remove(k)
      return undefined
    }
    return entry.value
  }

  async function set<T>(tenantId: string, key: string, value: T, ttlSeconds = defaultTtl) {
    const entry: Entry<T> = { value, expiresAt: now() + ttlSeconds * 1000 }
    const k = fullKey(tenantId, key)
    if (memory) memory.set(normalizeKey(k), deepFreeze(JSON.parse(JSON.stringify(entry))))
    else await storage.setItem(k, entry as never, { ttl: Math.max(60, ttlSeconds) })
  }

  async function remove(k: string) {
    if (memory) memory.delete(normalizeKey(k))
    else await storage.removeItem(k)
  }

  async function del(tenantId: string, ...keys: string[]) {
    for (const key of keys) {
      const k = fullKey(tenantId, key)
      epochs[slot(k)]++
      await remove(k)
    }
  }

  /** Cached value of `key`, loading and storing it on a miss. `undefined` results are not cached. */
  async function wrap<T>(tenantId: string, key: string, load: () => Promise<T | undefined>, ttlSeconds?: number) {
    const hit = await get<T>(tenantId, key)
    if (hit !== undefined) return hit
    const k = fullKey(tenantId, key)
    const s = slot(k)
    const epoch = epochs[s]
    const value = await load()
    if (value !== undefined && epochs[s] === epoch) await set(tenantId, key, value, ttlSeconds)
    return value
  }

  /** Round trip through the driver, for /health. */
  async function ping() {
    const k = `health:${now()}:${Math.random()}`
    await storage.setItem(k, 1)
    await storage.removeItem(k)
  }

  return { get, set, del, wrap, ping, dispose: () => storage.dispose() }
}

export type Cache = ReturnType<typeof createCache>

/** The Map behind unstorage's memory driver when it is the only mount, else undefined. */
function memoryMapOf(storage: Storage): Map<string, unknown> | undefined {
  const mounts = storage.getMounts('')
  if (mounts.length !== 1 || mounts[0].base !== '') return undefined
  const driver = mounts[0].driver as { name?: string; getInstance?: () => unknown }
  if (driver.name !== 'memory' || typeof driver.getInstance !== 'function') return undefined
  const map = driver.getInstance()
  return map instanceof Map ? map : undefined
}

const NEEDS_NORMALIZING = /[?/\\]|::|^:|:$/

/** unstorage's key normalisation (`a/b` → `a:b`, no `?` suffix, no leading/trailing `:`). */
function normalizeKey(key: string) {
  if (!NEEDS_NORMALIZING.test(key)) return key
  return key.split('?')[0].replace(/[/\\]/g, ':').replace(/:+/g, ':').replace(/^:|:$/g, '')
}

/** Freezes a JSON value and everything in it. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v)
    Object.freeze(value)
  }
  return value
}
