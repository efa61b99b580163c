/** Conversion functions between numbers, texts, logical values and dates, and CONVERT for units. */

import { DAY_MS, formatDate, parseDate, parseWith } from '../dates.ts'
import { fail } from '../errors.ts'
import { parseNumber, scalar, toBoolean, toDate, toNumber, toText } from '../values.ts'
import { formatDatePattern, formatNumberPattern, isDateFormat } from './format.ts'
import { category } from './types.ts'
import { convert } from './units.ts'

/** Excel's serial day 0 (1899-12-30), so serial 45366 is 2024-03-15. */
const SERIAL_EPOCH = Date.UTC(1899, 11, 30)

/** Numbers as people type them: "1,234.5", "12%", " 7 ". */
function readNumber(text: string): number {
  const t = text.trim()
  const percent = t.endsWith('%')
  const n = parseNumber((percent ? t.slice(0, -1) : t).replace(/(\d),(?=\d{3}(\D|$))/g, '$1'))
  if (n === undefined) return fail('VALUE', `"${text}" is not a number`)
  return percent ? n / 100 : n
}

export const conversionFunctions = category('conversion', [
  {
    name: 'VALUE',
    description: 'The number a text spells: thousands separators and a trailing % are understood; blank is 0.',
    params: [['text', 'text', 'The text']],
    returns: 'number',
    examples: [
      ['VALUE("1,234.5")', 1234.5, 'Thousands separator'],
      ['VALUE("12%")', 0.12, 'A percentage'],
    ],
    call: ([v]) => {
      const x = scalar(v)
      return typeof x === 'string' && x.trim() !== '' ? readNumber(x) : toNumber(x)
    },
  },
  {
    name: 'TEXT',
    description:
      'Formats a number with an Excel number format (0.00, #,##0, 0%, 0.00E+00) or a date with an Excel date format (yyyy-mm-dd, dd mmm yyyy, hh:mm).',
    params: [
      ['value', 'any', 'A number or a date'],
      ['format', 'text', 'The Excel format'],
    ],
    returns: 'text',
    examples: [
      ['TEXT(1234.5, "#,##0.00")', '1,234.50', 'Thousands and two decimals'],
      ['TEXT(0.256, "0.0%")', '25.6%', 'Percentage'],
      ['TEXT("2024-03-05", "dd/mm/yyyy")', '05/03/2024', 'A date'],
    ],
    call: ([v, f]) => {
      const value = scalar(v)
      const format = toText(f)
      if (typeof value === 'string' && isDateFormat(format) && parseDate(value)) {
        return formatDatePattern((parseDate(value) as { ms: number }).ms, format)
      }
      if (value === null) return formatNumberPattern(0, format)
      if (typeof value === 'string' && parseNumber(value) === undefined) return value
      return formatNumberPattern(toNumber(value), format)
    },
  },
  {
    name: 'TO_NUMBER',
    description: 'The value as a number: numeric text, TRUE/FALSE as 1/0; blank stays blank; other text is #VALUE!.',
    params: [['value', 'any', 'The value']],
    returns: 'number',
    examples: [['TO_NUMBER(" 42 ")', 42, 'Spaces are ignored']],
    call: ([v]) => {
      const x = scalar(v)
      if (x === null || x === '') return null
      return typeof x === 'string' ? readNumber(x) : toNumber(x)
    },
  },
  {
    name: 'TO_TEXT',
    description: 'The value as text: numbers with up to 15 significant digits, TRUE/FALSE, lists joined with ", ", blank as "".',
    params: [['value', 'any', 'The value']],
    returns: 'text',
    examples: [['TO_TEXT(0.1 + 0.2)', '0.3', 'Fifteen significant digits']],
    call: ([v]) => toText(v),
  },
  {
    name: 'TO_BOOLEAN',
    description: 'The value as TRUE/FALSE: non-zero numbers and "true"/"yes"/"1" are TRUE; blank, 0, "false"/"no"/"0" are FALSE.',
    params: [['value', 'any', 'The value']],
    returns: 'boolean',
    examples: [['TO_BOOLEAN("Yes")', true, 'Case does not matter']],
    call: ([v]) => toBoolean(v),
  },
  {
    name: 'TO_DATE',
    description: 'The value as an ISO date: ISO text, text in a given layout, or an Excel serial day number; blank stays blank.',
    params: [
      ['value', 'any', 'Text or a serial number'],
      ['format?', 'text', 'The layout of the text, e.g. DD.MM.YYYY'],
    ],
    returns: 'date',
    examples: [
      ['TO_DATE(45366)', '2024-03-15', 'An Excel serial number'],
      ['TO_DATE("15.03.2024", "DD.MM.YYYY")', '2024-03-15', 'A given layout'],
    ],
    call: ([v, f]) => {
      const x = scalar(v)
      if (x === null || x === '') return null
      if (typeof x === 'number') return formatDate(SERIAL_EPOCH + Math.round(x * DAY_MS), !Number.isInteger(x))
      if (f !== undefined) {
        const d = parseWith(toText(x), toText(f))
        return d ? formatDate(d.ms, d.hasTime) : fail('VALUE', `"${toText(x)}" does not match ${toText(f)}`)
      }
      const d = toDate(x)
      return d ? formatDate(d.ms, d.hasTime) : null
    },
  },
  {
    name: 'CONVERT',
    description:
      'Converts a measurement between units of one kind (kg/lbm, cm/in, C/F, mL/L, mmHg/kPa …); #N/A for unknown or mismatched units.',
    params: [
      ['value', 'number', 'The measurement'],
      ['from', 'text', 'Its unit, e.g. "kg"'],
      ['to', 'text', 'The target unit, e.g. "lbm"'],
    ],
    returns: 'number',
    examples: [
      ['ROUND(CONVERT(70, "kg", "lbm"), 2)', 154.32, 'Kilograms to pounds'],
      ['CONVERT(37, "C", "F")', 98.6, 'Celsius to Fahrenheit'],
      ['CONVERT(10, "in", "cm")', 25.4, 'Inches to centimetres'],
    ],
    call: ([v, a, b]) => convert(toNumber(v), toText(a), toText(b)),
  },
])
