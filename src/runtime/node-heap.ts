import { setFlagsFromString } from 'node:v8'

/**
 * How much V8 lets the old generation grow past what survived its last full collection before
 * the next one: 60 % (V8's own factor, chosen from its GC speed, reaches 4× under a sync's
 * allocation rate). A sync or a recompute makes garbage at a high rate with little of it kept
 * (~35 MiB live): with V8's choice the heap reached ~160 MiB at 100,000 rows and ~185 MiB at a
 * million, for a process peak of 321–350 MiB; at 60 % the same 100,000-row run peaks at 217 MiB,
 * as fast within the noise (docs/performance.md). The flag is read at each collection, so setting
 * it at start takes effect. An operator's own `--heap-growing-percent` is left as given.
 */
export const HEAP_GROWING_PERCENT = 60

export function tuneHeap(argv: readonly string[] = process.execArgv): boolean {
  if (/--heap[-_]growing[-_]percent/.test([...argv, process.env.NODE_OPTIONS ?? ''].join(' '))) return false
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  return true
}
