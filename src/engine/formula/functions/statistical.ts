/** Statistical functions over arguments and lists (Excel semantics; see numbersOf for what counts). */
import { fail } from '../errors.ts'
import { flatten, isBlank, parseNumber, toNumber, type Value } from '../values.ts'
import { mean, numbersOf, percentile, variance } from './numbers.ts'
import { category } from './types.ts'

const NUMBERS: [string, string, string] = ['number...', 'number|array', 'Numbers or lists of numbers']
const VALUES: [string, string, string] = ['value...', 'any', 'Values or lists']
const LIST: [string, string, string] = ['list', 'array', 'The numbers']

function median(xs: number[]): number {
  if (xs.length === 0) return fail('NUM', 'no numbers')
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** Excel MODE.SNGL: the most frequent number, the first to reach the top count; #N/A without repeats. */
function mode(xs: number[]): number {
  const counts = new Map<number, number>()
  let best = Number.NaN
  let top = 1
  for (const x of xs) {
    const c = (counts.get(x) ?? 0) + 1
    counts.set(x, c)
    if (c > top) {
      top = c
      best = x
    }
  }
  if (top < 2) return fail('NA', 'no value repeats')
  return xs.find((x) => counts.get(x) === top) ?? best
}

function kth(l: Value, k: Value, largest: boolean): number {
  const xs = numbersOf([flatten([l])]).sort((a, b) => (largest ? b - a : a - b))
  const n = Math.ceil(toNumber(k))
  return n < 1 || n > xs.length ? fail('NUM', `k must be between 1 and ${xs.length}`) : xs[n - 1]
}

/** COUNT: numbers (and numeric texts); logical values given directly count as in Excel. */
function countNumbers(args: Value[]): number {
  let n = 0
  for (const a of args) {
    const direct = !Array.isArray(a)
    for (const v of flatten([a])) {
      if (typeof v === 'number' || (typeof v === 'string' && parseNumber(v) !== undefined) || (direct && typeof v === 'boolean'))
        n++
    }
  }
  return n
}

export const statisticalFunctions = category('statistical', [
  {
    name: 'AVERAGE',
    description: 'The arithmetic mean; #DIV/0! when there is no number.',
    params: [NUMBERS],
    returns: 'number',
    examples: [['AVERAGE(2, 4, ARRAY(6, "x"))', 4, 'The text in the list is skipped']],
    call: (args) => mean(numbersOf(args)),
  },
  {
    name: 'MEDIAN',
    description: 'The middle number (mean of the two middle ones for an even count).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['MEDIAN(1, 9, 3, 4)', 3.5, 'Mean of 3 and 4']],
    call: (args) => median(numbersOf(args)),
  },
  {
    name: 'MODE',
    description: 'The most frequent number; #N/A when no number repeats.',
    params: [NUMBERS],
    returns: 'number',
    examples: [['MODE(1, 2, 2, 3, 3)', 2, '2 reaches two first']],
    call: (args) => mode(numbersOf(args)),
  },
  {
    name: 'STDEV',
    description: 'Sample standard deviation (n − 1); #DIV/0! for fewer than two numbers.',
    params: [NUMBERS],
    returns: 'number',
    examples: [['ROUND(STDEV(2, 4, 4, 4, 5, 5, 7, 9), 4)', 2.1381, 'Sample']],
    call: (args) => Math.sqrt(variance(numbersOf(args), true)),
  },
  {
    name: 'STDEVP',
    description: 'Population standard deviation (n).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['STDEVP(2, 4, 4, 4, 5, 5, 7, 9)', 2, 'Population']],
    call: (args) => Math.sqrt(variance(numbersOf(args), false)),
  },
  {
    name: 'VAR',
    description: 'Sample variance (n − 1).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['VAR(1, 2, 3, 4)', 1.6666666666666667, 'Sample variance']],
    call: (args) => variance(numbersOf(args), true),
  },
  {
    name: 'VARP',
    description: 'Population variance (n).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['VARP(1, 2, 3, 4)', 1.25, 'Population variance']],
    call: (args) => variance(numbersOf(args), false),
  },
  {
    name: 'COUNT',
    description: 'How many numbers (numeric texts included; TRUE/FALSE only when given directly).',
    params: [VALUES],
    returns: 'number',
    examples: [['COUNT(1, "2", "x", BLANK(), ARRAY(3, TRUE))', 3, '1, "2" and 3']],
    call: countNumbers,
  },
  {
    name: 'COUNTA',
    description: 'How many values are not blank (blank and "" are not counted).',
    params: [VALUES],
    returns: 'number',
    examples: [['COUNTA(1, "", "x", BLANK(), ARRAY("a", "b"))', 4, '1, "x", "a" and "b"']],
    call: (args) => flatten(args).filter((v) => !isBlank(v)).length,
  },
  {
    name: 'COUNTBLANK',
    description: 'How many values are blank (blank or "").',
    params: [VALUES],
    returns: 'number',
    examples: [['COUNTBLANK(1, "", BLANK(), "x")', 2, '"" and BLANK()']],
    call: (args) => flatten(args).filter(isBlank).length,
  },
  {
    name: 'PERCENTILE',
    description: 'The k-th percentile (k from 0 to 1), interpolating like Excel PERCENTILE.INC.',
    params: [LIST, ['k', 'number', 'Between 0 and 1']],
    returns: 'number',
    examples: [['PERCENTILE(ARRAY(1, 2, 3, 4), 0.25)', 1.75, 'First quartile by interpolation']],
    call: ([l, k]) => percentile(numbersOf([flatten([l])]), toNumber(k)),
  },
  {
    name: 'QUARTILE',
    description: 'A quartile: 0 minimum, 1 first quartile, 2 median, 3 third quartile, 4 maximum (Excel QUARTILE.INC).',
    params: [LIST, ['quart', 'number', '0, 1, 2, 3 or 4']],
    returns: 'number',
    examples: [['QUARTILE(ARRAY(1, 2, 3, 4, 5), 3)', 4, 'Third quartile']],
    call: ([l, q]) => {
      const quart = Math.trunc(toNumber(q))
      return quart < 0 || quart > 4 ? fail('NUM', 'quart must be 0 to 4') : percentile(numbersOf([flatten([l])]), quart / 4)
    },
  },
  {
    name: 'LARGE',
    description: 'The k-th largest number.',
    params: [LIST, ['k', 'number', '1 is the largest']],
    returns: 'number',
    examples: [['LARGE(ARRAY(5, 1, 9, 7), 2)', 7, 'Second largest']],
    call: ([l, k]) => kth(l, k, true),
  },
  {
    name: 'SMALL',
    description: 'The k-th smallest number.',
    params: [LIST, ['k', 'number', '1 is the smallest']],
    returns: 'number',
    examples: [['SMALL(ARRAY(5, 1, 9, 7), 2)', 5, 'Second smallest']],
    call: ([l, k]) => kth(l, k, false),
  },
])
