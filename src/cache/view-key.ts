import type { Cache } from './cache.ts'

/**
 * The cache key of a view row (tenant-scoped by the cache). The views module fills it and deletes
 * it on every write of the view; the audit deletes it when a read moves the view's `accessedAt`.
 */
export const viewKey = (id: number) => `view:${id}`

/** Drops a view's cached row after a write outside the views module (the audit's `accessedAt`). */
export const dropCachedView = (cache: Cache, tenantId: string, id: number) => cache.del(tenantId, viewKey(id))
