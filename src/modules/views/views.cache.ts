/** The cache key of a view row (tenant-scoped by the cache); every write of the view deletes it. */
export const viewKey = (id: number) => `view:${id}`
