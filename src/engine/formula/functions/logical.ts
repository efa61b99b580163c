/**
 * Logical functions. IF, IFS, SWITCH, IFERROR, IFBLANK and the IS… tests are lazy, as in Excel:
 * only the branch taken is evaluated, and IFERROR/ISERROR/IS… see an error of their argument
 * instead of failing. AND, OR and XOR evaluate every argument, as Excel does (an error in any
 * argument is the result).
 */

import type { ValueType } from '../ast.ts'
import { parseDate } from '../dates.ts'
import { FormulaError, fail } from '../errors.ts'
import { compare, flatten, isBlank, scalar, toBoolean, type Value } from '../values.ts'
import { category, type Thunk } from './types.ts'

/** The common type of the branches, or `any`. */
export const common = (types: ValueType[]): ValueType => {
  const known = types.filter((t) => t !== 'blank')
  return known.length > 0 && known.every((t) => t === known[0]) ? known[0] : 'any'
}

/** The value of a thunk, or the FormulaError it raised. */
function attempt(thunk: Thunk): { value: Value } | { error: FormulaError } {
  try {
    return { value: thunk() }
  } catch (error) {
    if (error instanceof FormulaError) return { error }
    throw error
  }
}

const test =
  (pred: (v: Value) => boolean) =>
  ([t]: Thunk[]) => {
    const r = attempt(t)
    return 'value' in r && pred(scalar(r.value))
  }

/** Booleans of AND/OR/XOR: lists flattened, blanks skipped; none at all is #VALUE!. */
function booleans(args: Value[]): boolean[] {
  const out = flatten(args)
    .filter((v) => v !== null && v !== '')
    .map(toBoolean)
  return out.length === 0 ? fail('VALUE', 'no logical values') : out
}

export const logicalFunctions = category('logical', [
  {
    name: 'IF',
    description:
      'One value when the condition is TRUE, another when FALSE (FALSE when omitted, as in Excel). Only the branch taken is evaluated.',
    params: [
      ['condition', 'boolean', 'The test'],
      ['then', 'any', 'The value when TRUE'],
      ['else?', 'any', 'The value when FALSE (default FALSE)'],
    ],
    returns: (t) => common(t.length > 2 ? [t[1], t[2]] : [t[1], 'boolean']),
    examples: [
      ['IF(72 > 65, "senior", "adult")', 'senior', 'The TRUE branch'],
      ['IF(FALSE, 1/0, "safe")', 'safe', 'The untaken branch is not evaluated'],
    ],
    lazy: true,
    call: ([c, t, e]) => (toBoolean(c()) ? t() : e ? e() : false),
  },
  {
    name: 'IFS',
    description: 'The value of the first condition that is TRUE; #N/A when none is.',
    params: [
      ['condition', 'boolean', 'A test'],
      ['value', 'any', 'Its value'],
      ['more...?', 'any', 'Further condition, value pairs'],
    ],
    returns: (t) => common(t.filter((_, i) => i % 2 === 1)),
    examples: [['IFS(5 > 10, "high", 5 > 3, "medium", TRUE, "low")', 'medium', 'The first TRUE condition wins']],
    lazy: true,
    call: (args) => {
      if (args.length % 2 !== 0) return fail('VALUE', 'IFS needs condition, value pairs')
      for (let i = 0; i < args.length; i += 2) if (toBoolean(args[i]())) return args[i + 1]()
      return fail('NA', 'no condition of IFS is TRUE')
    },
  },
  {
    name: 'SWITCH',
    description:
      'Compares a value with cases and answers the result of the first equal one, else the default (#N/A without one).',
    params: [
      ['value', 'any', 'The value to compare'],
      ['case', 'any', 'A value to match'],
      ['result', 'any', 'Its result'],
      ['more...?', 'any', 'Further case, result pairs, then an optional default'],
    ],
    returns: (t) => common([...t.slice(2).filter((_, i) => i % 2 === 0), ...(t.length % 2 === 0 ? [t[t.length - 1]] : [])]),
    examples: [['SWITCH("F", "M", "Male", "F", "Female", "Unknown")', 'Female', 'Second case matches']],
    lazy: true,
    call: ([v, ...rest]) => {
      const value = v()
      for (let i = 0; i + 1 < rest.length; i += 2) if (compare(value, rest[i]()) === 0) return rest[i + 1]()
      return rest.length % 2 === 1 ? rest[rest.length - 1]() : fail('NA', 'no case of SWITCH matches')
    },
  },
  {
    name: 'AND',
    description: 'TRUE when every argument is TRUE (lists flattened, blanks skipped).',
    params: [['logical...', 'boolean|array', 'Conditions']],
    returns: 'boolean',
    examples: [['AND(TRUE, 3 > 2, "yes")', true, 'All true']],
    call: (args) => booleans(args).every(Boolean),
  },
  {
    name: 'OR',
    description: 'TRUE when at least one argument is TRUE.',
    params: [['logical...', 'boolean|array', 'Conditions']],
    returns: 'boolean',
    examples: [['OR(FALSE, 1 > 2, 0)', false, 'None true']],
    call: (args) => booleans(args).some(Boolean),
  },
  {
    name: 'XOR',
    description: 'TRUE when an odd number of arguments are TRUE.',
    params: [['logical...', 'boolean|array', 'Conditions']],
    returns: 'boolean',
    examples: [['XOR(TRUE, TRUE, TRUE)', true, 'Three is odd']],
    call: (args) => booleans(args).filter(Boolean).length % 2 === 1,
  },
  {
    name: 'NOT',
    description: 'The opposite of a logical value.',
    params: [['logical', 'boolean', 'A condition']],
    returns: 'boolean',
    examples: [['NOT(1 > 2)', true, 'Negation']],
    call: ([v]) => !toBoolean(v),
  },
  {
    name: 'TRUE',
    description: 'The logical value TRUE.',
    params: [],
    returns: 'boolean',
    examples: [['TRUE()', true, 'Same as TRUE']],
    call: () => true,
  },
  {
    name: 'FALSE',
    description: 'The logical value FALSE.',
    params: [],
    returns: 'boolean',
    examples: [['FALSE()', false, 'Same as FALSE']],
    call: () => false,
  },
  {
    name: 'BLANK',
    description: 'The blank value (an empty cell).',
    params: [],
    returns: 'blank',
    examples: [['ISBLANK(BLANK())', true, 'BLANK is blank']],
    call: () => null,
  },
  {
    name: 'ISBLANK',
    description: 'TRUE for a blank value, an empty text or an empty list.',
    params: [['value', 'any', 'The value to test']],
    returns: 'boolean',
    examples: [['ISBLANK("")', true, 'Empty text counts as blank']],
    lazy: true,
    call: test(isBlank),
  },
  {
    name: 'ISERROR',
    description: 'TRUE when evaluating the value fails (#DIV/0!, #VALUE!, #NUM!, #REF!, #N/A…).',
    params: [['value', 'any', 'The value to test']],
    returns: 'boolean',
    examples: [['ISERROR(1/0)', true, 'Division by zero']],
    lazy: true,
    call: ([t]) => 'error' in attempt(t),
  },
  {
    name: 'IFERROR',
    description: 'The value, or the fallback when evaluating the value fails.',
    params: [
      ['value', 'any', 'The value to try'],
      ['fallback', 'any', 'The value on error'],
    ],
    returns: (t) => common(t),
    examples: [['IFERROR(10/0, 0)', 0, 'Division by zero replaced by 0']],
    lazy: true,
    call: ([v, f]) => {
      const r = attempt(v)
      return 'value' in r ? r.value : f()
    },
  },
  {
    name: 'IFBLANK',
    description: 'The value, or the fallback when the value is blank (blank, "" or an empty list).',
    params: [
      ['value', 'any', 'The value'],
      ['fallback', 'any', 'The value when blank'],
    ],
    returns: (t) => common(t),
    examples: [['IFBLANK("", "n/a")', 'n/a', 'Empty text replaced']],
    lazy: true,
    call: ([v, f]) => {
      const value = v()
      return isBlank(value) ? f() : value
    },
  },
  {
    name: 'ISNUMBER',
    description: 'TRUE for a number (a numeric text is not a number, as in Excel).',
    params: [['value', 'any', 'The value to test']],
    returns: 'boolean',
    examples: [['ISNUMBER("42")', false, 'Text, even numeric']],
    lazy: true,
    call: test((v) => typeof v === 'number'),
  },
  {
    name: 'ISTEXT',
    description: 'TRUE for a text (dates, being ISO texts, are texts).',
    params: [['value', 'any', 'The value to test']],
    returns: 'boolean',
    examples: [['ISTEXT("abc")', true, 'A text']],
    lazy: true,
    call: test((v) => typeof v === 'string'),
  },
  {
    name: 'ISLOGICAL',
    description: 'TRUE for TRUE or FALSE.',
    params: [['value', 'any', 'The value to test']],
    returns: 'boolean',
    examples: [['ISLOGICAL(1 = 1)', true, 'A comparison is logical']],
    lazy: true,
    call: test((v) => typeof v === 'boolean'),
  },
  {
    name: 'ISDATE',
    description: 'TRUE for a text that is a valid ISO 8601 date or date-time.',
    params: [['value', 'any', 'The value to test']],
    returns: 'boolean',
    examples: [['ISDATE("2024-02-30")', false, 'No 30 February']],
    lazy: true,
    call: test((v) => typeof v === 'string' && parseDate(v) !== null),
  },
])
