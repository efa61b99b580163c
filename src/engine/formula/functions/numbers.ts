/** Number helpers shared by the math and statistical functions. */
import { fail } from '../errors.ts'
import { finite, flatten, parseNumber, toNumber, type Value } from '../values.ts'

/**
 * The numbers of aggregate arguments, Excel style: a direct argument is coerced (blank skipped,
 * "abc" is #VALUE!); inside a list only numbers and numeric texts count, everything else is skipped.
 */
export function numbersOf(args: readonly Value[]): number[] {
  const out: number[] = []
  for (const a of args) {
    if (Array.isArray(a)) {
      for (const v of flatten(a)) {
        if (typeof v === 'number') out.push(v)
        else if (typeof v === 'string' && parseNumber(v) !== undefined) out.push(parseNumber(v) as number)
      }
    } else if (a !== null && a !== '') out.push(toNumber(a))
  }
  return out
}

/**
 * Rounds to `digits` decimals (negative: tens, hundreds…) with `mode` on the magnitude. A relative
 * nudge of 1e-14 absorbs binary representation error, so ROUND(1.005, 2) is 1.01 as in Excel.
 */
export function roundTo(n: number, digits: number, mode: 'half' | 'up' | 'down'): number {
  const d = Math.max(-300, Math.min(300, Math.trunc(digits)))
  const abs = Math.abs(n)
  const scale = 10 ** Math.abs(d)
  const x = d >= 0 ? abs * scale : abs / scale
  const eps = x * 1e-14
  const r = mode === 'half' ? Math.round(x + eps) : mode === 'up' ? Math.ceil(x - eps) : Math.floor(x + eps)
  const out = d >= 0 ? r / scale : r * scale
  return n < 0 && out !== 0 ? -out : out
}

/** Multiple of `significance` reached with `round` (FLOOR/CEILING), Excel's sign rules. */
export function toMultiple(n: number, significance: number, round: (x: number) => number): number {
  if (significance === 0) return n === 0 ? 0 : fail('DIV_ZERO', 'significance is 0')
  if (n > 0 && significance < 0) return fail('NUM', 'a positive number needs a positive significance')
  const q = Number((n / significance).toPrecision(15))
  return finite(Number((round(q) * significance).toPrecision(15)))
}

export const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)

export function mean(xs: number[]): number {
  return xs.length === 0 ? fail('DIV_ZERO', 'no numbers to average') : sum(xs) / xs.length
}

/** Sample (n − 1) or population variance. */
export function variance(xs: number[], sample: boolean): number {
  const n = xs.length
  if (n < (sample ? 2 : 1)) return fail('DIV_ZERO', `needs at least ${sample ? 2 : 1} numbers`)
  const m = mean(xs)
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (sample ? n - 1 : n)
}

/** Excel PERCENTILE.INC: linear interpolation between closest ranks, k in [0, 1]. */
export function percentile(xs: number[], k: number): number {
  if (xs.length === 0) return fail('NUM', 'no numbers')
  if (k < 0 || k > 1) return fail('NUM', 'k must be between 0 and 1')
  const sorted = [...xs].sort((a, b) => a - b)
  const h = (sorted.length - 1) * k
  const lo = Math.floor(h)
  const hi = Math.ceil(h)
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo])
}
