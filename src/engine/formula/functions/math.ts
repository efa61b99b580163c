/** Math functions (Excel semantics). */
import { fail } from '../errors.ts'
import { finite, toNumber } from '../values.ts'
import { numbersOf, roundTo, sum, toMultiple } from './numbers.ts'
import { category } from './types.ts'

const NUM: [string, string, string] = ['number', 'number', 'The number']
const DIGITS: [string, string, string] = ['digits?', 'number', 'Decimal places (default 0; negative rounds to tens, hundreds…)']
const NUMBERS: [string, string, string] = ['number...', 'number|array', 'Numbers or lists of numbers']

export const mathFunctions = category('math', [
  {
    name: 'ABS',
    description: 'The absolute value.',
    params: [NUM],
    returns: 'number',
    examples: [['ABS(-4.5)', 4.5, 'Drops the sign']],
    call: ([n]) => Math.abs(toNumber(n)),
  },
  {
    name: 'ROUND',
    description: 'Rounds to a number of decimals, halves away from zero.',
    params: [NUM, DIGITS],
    returns: 'number',
    examples: [
      ['ROUND(2.345, 2)', 2.35, 'Two decimals'],
      ['ROUND(-2.5)', -3, 'Halves go away from zero'],
      ['ROUND(1234, -2)', 1200, 'To hundreds'],
    ],
    call: ([n, d = 0]) => roundTo(toNumber(n), toNumber(d), 'half'),
  },
  {
    name: 'ROUNDUP',
    description: 'Rounds away from zero.',
    params: [NUM, DIGITS],
    returns: 'number',
    examples: [['ROUNDUP(3.141, 2)', 3.15, 'Up to two decimals']],
    call: ([n, d = 0]) => roundTo(toNumber(n), toNumber(d), 'up'),
  },
  {
    name: 'ROUNDDOWN',
    description: 'Rounds toward zero.',
    params: [NUM, DIGITS],
    returns: 'number',
    examples: [['ROUNDDOWN(-3.99, 1)', -3.9, 'Toward zero']],
    call: ([n, d = 0]) => roundTo(toNumber(n), toNumber(d), 'down'),
  },
  {
    name: 'FLOOR',
    description: 'Rounds down to a multiple of the significance.',
    params: [NUM, ['significance?', 'number', 'The multiple (default 1)']],
    returns: 'number',
    examples: [['FLOOR(27, 5)', 25, 'Down to a multiple of 5']],
    call: ([n, s = 1]) => toMultiple(toNumber(n), toNumber(s), Math.floor),
  },
  {
    name: 'CEILING',
    description: 'Rounds up to a multiple of the significance.',
    params: [NUM, ['significance?', 'number', 'The multiple (default 1)']],
    returns: 'number',
    examples: [['CEILING(2.1, 0.5)', 2.5, 'Up to a multiple of 0.5']],
    call: ([n, s = 1]) => toMultiple(toNumber(n), toNumber(s), Math.ceil),
  },
  {
    name: 'INT',
    description: 'Rounds down to the nearest integer.',
    params: [NUM],
    returns: 'number',
    examples: [['INT(-2.5)', -3, 'Down, not toward zero']],
    call: ([n]) => Math.floor(toNumber(n)),
  },
  {
    name: 'TRUNC',
    description: 'Cuts off decimals (toward zero).',
    params: [NUM, DIGITS],
    returns: 'number',
    examples: [['TRUNC(-2.57, 1)', -2.5, 'Keeps one decimal']],
    call: ([n, d = 0]) => roundTo(toNumber(n), toNumber(d), 'down'),
  },
  {
    name: 'MOD',
    description: 'The remainder of a division; it has the sign of the divisor.',
    params: [NUM, ['divisor', 'number', 'The divisor']],
    returns: 'number',
    examples: [['MOD(-3, 2)', 1, 'Sign of the divisor']],
    call: ([n, d]) => {
      const a = toNumber(n)
      const b = toNumber(d)
      return b === 0 ? fail('DIV_ZERO', 'division by zero') : a - b * Math.floor(a / b)
    },
  },
  {
    name: 'QUOTIENT',
    description: 'The integer part of a division.',
    params: [NUM, ['divisor', 'number', 'The divisor']],
    returns: 'number',
    examples: [['QUOTIENT(17, 5)', 3, '17 / 5 without remainder']],
    call: ([n, d]) => {
      const b = toNumber(d)
      return b === 0 ? fail('DIV_ZERO', 'division by zero') : Math.trunc(toNumber(n) / b)
    },
  },
  {
    name: 'POWER',
    description: 'A number raised to a power (same as ^).',
    params: [NUM, ['power', 'number', 'The exponent']],
    returns: 'number',
    examples: [['POWER(1.8, 2)', 3.24, 'Square of 1.8']],
    call: ([b, e]) => power(toNumber(b), toNumber(e)),
  },
  {
    name: 'SQRT',
    description: 'The square root; #NUM! for a negative number.',
    params: [NUM],
    returns: 'number',
    examples: [['SQRT(16)', 4, 'Square root']],
    call: ([n]) => {
      const x = toNumber(n)
      return x < 0 ? fail('NUM', 'square root of a negative number') : Math.sqrt(x)
    },
  },
  {
    name: 'EXP',
    description: 'e raised to a power.',
    params: [NUM],
    returns: 'number',
    examples: [['ROUND(EXP(2), 3)', 7.389, 'e squared']],
    call: ([n]) => finite(Math.exp(toNumber(n))),
  },
  {
    name: 'LN',
    description: 'The natural logarithm; #NUM! for zero or less.',
    params: [NUM],
    returns: 'number',
    examples: [['LN(1)', 0, 'ln 1']],
    call: ([n]) => log(toNumber(n), Math.E),
  },
  {
    name: 'LOG',
    description: 'The logarithm to a base (default 10).',
    params: [NUM, ['base?', 'number', 'The base (default 10)']],
    returns: 'number',
    examples: [['LOG(8, 2)', 3, 'log base 2 of 8']],
    call: ([n, b = 10]) => log(toNumber(n), toNumber(b)),
  },
  {
    name: 'LOG10',
    description: 'The base-10 logarithm.',
    params: [NUM],
    returns: 'number',
    examples: [['LOG10(1000)', 3, 'log base 10']],
    call: ([n]) => log(toNumber(n), 10),
  },
  {
    name: 'SIGN',
    description: '1 for a positive number, -1 for a negative one, 0 for zero.',
    params: [NUM],
    returns: 'number',
    examples: [['SIGN(-12)', -1, 'Negative']],
    call: ([n]) => Math.sign(toNumber(n)),
  },
  {
    name: 'PI',
    description: 'The number π.',
    params: [],
    returns: 'number',
    examples: [['ROUND(PI() * 100)', 314, 'π times 100, rounded']],
    call: () => Math.PI,
  },
  {
    name: 'SUM',
    description: 'Adds numbers; in lists, blanks and non-numeric texts are skipped.',
    params: [NUMBERS],
    returns: 'number',
    examples: [['SUM(1, 2, "3")', 6, 'A numeric text counts']],
    call: (args) => finite(sum(numbersOf(args))),
  },
  {
    name: 'MIN',
    description: 'The smallest number (0 when there is none).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['MIN(4, -1, 7)', -1, 'Smallest']],
    call: (args) => {
      const xs = numbersOf(args)
      return xs.length === 0 ? 0 : xs.reduce((a, b) => Math.min(a, b))
    },
  },
  {
    name: 'MAX',
    description: 'The largest number (0 when there is none).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['MAX(4, -1, 7)', 7, 'Largest']],
    call: (args) => {
      const xs = numbersOf(args)
      return xs.length === 0 ? 0 : xs.reduce((a, b) => Math.max(a, b))
    },
  },
  {
    name: 'PRODUCT',
    description: 'Multiplies numbers (0 when there is none).',
    params: [NUMBERS],
    returns: 'number',
    examples: [['PRODUCT(2, 3, 4)', 24, '2 × 3 × 4']],
    call: (args) => {
      const xs = numbersOf(args)
      return xs.length === 0 ? 0 : finite(xs.reduce((a, b) => a * b, 1))
    },
  },
])

/** `^` and POWER: 0 to a negative power is #DIV/0!, a negative base with a fractional power #NUM!. */
export function power(base: number, exponent: number): number {
  if (base === 0 && exponent < 0) return fail('DIV_ZERO', 'zero raised to a negative power')
  return finite(base ** exponent)
}

function log(n: number, base: number): number {
  if (n <= 0 || base <= 0) return fail('NUM', 'logarithm of zero or a negative number')
  if (base === 1) return fail('DIV_ZERO', 'logarithm to base 1')
  const r = base === Math.E ? Math.log(n) : base === 10 ? Math.log10(n) : Math.log(n) / Math.log(base)
  return Number(r.toPrecision(15))
}
