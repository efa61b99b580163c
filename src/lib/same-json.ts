/**
 * Whether `value` would be stored as the same JSON text as `stored` (a value parsed from stored
 * JSON): the same scalars, the same arrays, objects with the same keys in the same order. Compared
 * without making the text (a recompute compares every row of a panel and rewrites few of them);
 * anything JSON would not keep as it is (a number that is not finite, `undefined`, a class
 * instance) counts as different, and the row is written again.
 */
export function sameJson(value: unknown, stored: unknown): boolean {
  if (value === stored) return value !== undefined && (typeof value !== 'number' || Number.isFinite(value))
  if (typeof value !== 'object' || value === null || typeof stored !== 'object' || stored === null) return false
  if (Array.isArray(value)) {
    if (!Array.isArray(stored) || value.length !== stored.length) return false
    for (let i = 0; i < value.length; i++) if (!sameJson(value[i], stored[i])) return false
    return true
  }
  if (Array.isArray(stored) || Object.getPrototypeOf(value) !== Object.prototype) return false
  const keys = Object.keys(value)
  const storedKeys = Object.keys(stored)
  if (keys.length !== storedKeys.length) return false
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] !== storedKeys[i]) return false
    if (!sameJson((value as Record<string, unknown>)[keys[i]], (stored as Record<string, unknown>)[keys[i]])) return false
  }
  return true
}
