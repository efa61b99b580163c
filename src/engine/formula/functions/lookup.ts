/** Lookup and list functions, the COUNTIF family with Excel criteria, and FHIRPATH(). */
import { fail } from '../errors.ts'
import { compare, flatten, isBlank, parseNumber, toNumber, toText, type Value } from '../values.ts'
import { common } from './logical.ts'
import { mean, sum } from './numbers.ts'
import { category } from './types.ts'

const LIST: [string, string, string] = ['list', 'array', 'A list (a single value is a list of one)']
const CRITERION: [string, string, string] = ['criterion', 'any', 'A value, or a text such as ">5", "<>x", "=", "a*"']
const listOf = (v: Value): Value[] => flatten([v])

const wildcard = (pattern: string) =>
  new RegExp(
    `^${pattern.replace(/~([*?~])|([*?])|[.+^${}()|[\]\\]/g, (m, esc, wild) => (esc ? `\\${esc}` : wild ? (wild === '*' ? '[\\s\\S]*' : '[\\s\\S]') : `\\${m}`))}$`,
    'i',
  )

/**
 * An Excel criterion as a predicate: a number or logical matches equal values; a text may start
 * with = <> < <= > >=; a numeric operand compares numbers (numeric texts included), a text operand
 * compares texts case-insensitively with wildcards * and ? (~ escapes); "" or "=" matches blanks
 * and "<>" non-blanks.
 */
export function criterion(c: Value): (v: Value) => boolean {
  if (typeof c !== 'string') return (v) => !isBlank(v) && compare(v, c) === 0
  const m = /^(<=|>=|<>|<|>|=)?([\s\S]*)$/.exec(c) as RegExpExecArray
  const op = m[1] ?? '='
  const operand = m[2]
  const n = parseNumber(operand)
  if (operand === '') return op === '<>' ? (v) => !isBlank(v) : op === '=' ? isBlank : () => false
  if (n !== undefined) {
    const test = (d: number) =>
      op === '=' ? d === 0 : op === '<>' ? d !== 0 : op === '<' ? d < 0 : op === '<=' ? d <= 0 : op === '>' ? d > 0 : d >= 0
    return (v) => {
      const x = typeof v === 'number' ? v : typeof v === 'string' ? parseNumber(v) : undefined
      if (x === undefined) return op === '<>'
      return test(Math.sign(x - n))
    }
  }
  if (op === '=' || op === '<>') {
    const re = wildcard(operand)
    return (v) => re.test(toText(v)) === (op === '=')
  }
  return (v) => {
    if (typeof v !== 'string' || v === '') return false
    const d = compare(v, operand)
    return op === '<' ? d < 0 : op === '<=' ? d <= 0 : op === '>' ? d > 0 : d >= 0
  }
}

/** Elements of `values` whose partner in `test` meets the criterion (same list when none given). */
function picked(test: Value, c: Value, values: Value | undefined): Value[] {
  const keys = listOf(test)
  const source = values === undefined ? keys : listOf(values)
  if (source.length !== keys.length) return fail('VALUE', 'the lists must have the same length')
  const pred = criterion(c)
  return source.filter((_, i) => pred(keys[i]))
}
const numeric = (xs: Value[]) =>
  xs.flatMap((v) =>
    typeof v === 'number' ? [v] : typeof v === 'string' && parseNumber(v) !== undefined ? [parseNumber(v) as number] : [],
  )

export const lookupFunctions = category('lookup', [
  {
    name: 'CHOOSE',
    description: 'The value at a 1-based position among the arguments; only that one is evaluated.',
    params: [
      ['index', 'number', 'Which value (1 is the first)'],
      ['value...', 'any', 'The values to choose from'],
    ],
    returns: (t) => common(t.slice(1)),
    examples: [['CHOOSE(2, "low", "medium", "high")', 'medium', 'The second value']],
    lazy: true,
    call: ([i, ...values]) => {
      const k = Math.trunc(toNumber(i()))
      return k < 1 || k > values.length ? fail('VALUE', `index ${k} is outside 1…${values.length}`) : values[k - 1]()
    },
  },
  {
    name: 'FIRST',
    description: 'The first element of a list (blank when empty); a single value is itself.',
    params: [LIST],
    returns: 'any',
    examples: [['FIRST(SPLIT("x,y,z", ","))', 'x', 'First element']],
    call: ([v]) => listOf(v)[0] ?? null,
  },
  {
    name: 'LAST',
    description: 'The last element of a list (blank when empty).',
    params: [LIST],
    returns: 'any',
    examples: [['LAST(SPLIT("x,y,z", ","))', 'z', 'Last element']],
    call: ([v]) => listOf(v).at(-1) ?? null,
  },
  {
    name: 'INDEX',
    description: 'The element at a 1-based position of a list; #REF! outside the list.',
    params: [LIST, ['n', 'number', 'Position (1 is the first)']],
    returns: 'any',
    examples: [['INDEX(SPLIT("x,y,z", ","), 2)', 'y', 'Second element']],
    call: ([v, n]) => {
      const list = listOf(v)
      const k = Math.trunc(toNumber(n))
      return k < 1 || k > list.length ? fail('REF', `position ${k} is outside the list of ${list.length}`) : list[k - 1]
    },
  },
  {
    name: 'MATCH',
    description: 'The 1-based position of the first element equal to a value (case-insensitive); #N/A when absent.',
    params: [['value', 'any', 'The value to find'], LIST],
    returns: 'number',
    examples: [['MATCH("b", SPLIT("a,b,c", ","))', 2, 'Found second']],
    call: ([v, l]) => {
      const k = listOf(l).findIndex((x) => compare(x, v) === 0)
      return k < 0 ? fail('NA', `${toText(v)} is not in the list`) : k + 1
    },
  },
  {
    name: 'COUNTIF',
    description: 'How many elements of a list meet a criterion.',
    params: [LIST, CRITERION],
    returns: 'number',
    examples: [['COUNTIF(ARRAY(3, 7, 9, "x"), ">5")', 2, 'Numbers above 5']],
    call: ([l, c]) => picked(l, c, undefined).length,
  },
  {
    name: 'SUMIF',
    description: 'Sums the elements (or those of a second list, position by position) whose element meets the criterion.',
    params: [LIST, CRITERION, ['sum_list?', 'array', 'The values to sum (default: the list)']],
    returns: 'number',
    examples: [['SUMIF(ARRAY(3, 7, 9), ">5")', 16, '7 + 9']],
    call: ([l, c, s]) => sum(numeric(picked(l, c, s))),
  },
  {
    name: 'AVERAGEIF',
    description: 'Averages the elements (or those of a second list) whose element meets the criterion.',
    params: [LIST, CRITERION, ['average_list?', 'array', 'The values to average (default: the list)']],
    returns: 'number',
    examples: [['AVERAGEIF(ARRAY("a", "b", "a"), "a", ARRAY(10, 20, 30))', 20, 'Average where the key is "a"']],
    call: ([l, c, s]) => mean(numeric(picked(l, c, s))),
  },
  {
    name: 'ARRAY',
    description: 'A list of the arguments (lists are flattened).',
    params: [['value...?', 'any', 'The elements']],
    returns: 'array',
    examples: [['ARRAY(1, "a", TRUE)', [1, 'a', true], 'Three elements']],
    call: (args) => flatten(args),
  },
  {
    name: 'ARRAY_JOIN',
    description: 'Joins the elements of a list with a separator (default ", ").',
    params: [LIST, ['separator?', 'text', 'Between elements (default ", ")']],
    returns: 'text',
    examples: [['ARRAY_JOIN(ARRAY("John", "Paul"), " ")', 'John Paul', 'Given names']],
    call: ([l, s = ', ']) => listOf(l).map(toText).join(toText(s)),
  },
  {
    name: 'ARRAY_UNIQUE',
    description: 'The distinct elements of a list, in first-seen order (texts compared case-insensitively).',
    params: [LIST],
    returns: 'array',
    examples: [['ARRAY_UNIQUE(ARRAY("a", "A", "b", "a"))', ['a', 'b'], 'Duplicates removed']],
    call: ([l]) => listOf(l).filter((v, i, all) => all.findIndex((w) => compare(v, w) === 0) === i),
  },
  {
    name: 'ARRAY_COMPACT',
    description: 'The list without blank elements (blank and "").',
    params: [LIST],
    returns: 'array',
    examples: [['ARRAY_COMPACT(ARRAY("a", "", BLANK(), "b"))', ['a', 'b'], 'Blanks removed']],
    call: ([l]) => listOf(l).filter((v) => !isBlank(v)),
  },
  {
    name: 'FHIRPATH',
    description:
      "Evaluates a FHIRPath expression (R4 model) against the row's source record: no result is blank, one result a value, several a list.",
    params: [['expression', 'text', 'A FHIRPath expression, e.g. "Patient.name.where(use = \'official\').given.first()"']],
    returns: 'any',
    examples: [['ISBLANK(FHIRPATH("{}"))', true, 'An empty FHIRPath collection is blank']],
    call: ([e], ctx) => ctx.fhirpath(toText(e)),
  },
])
