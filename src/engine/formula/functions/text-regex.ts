/** Text functions with regular expressions (guarded: see regex.ts). */
import { fail } from '../errors.ts'
import { toText } from '../values.ts'
import { checkInput, safeRegex } from './regex.ts'
import { category } from './types.ts'

const MAX_TEXT = 32_767
const long = (s: string) => (s.length > MAX_TEXT ? fail('VALUE', `text longer than ${MAX_TEXT} characters`) : s)

export const regexFunctions = category('text', [
  {
    name: 'REGEX_MATCH',
    description: 'TRUE when the text matches the regular expression (JavaScript syntax; a leading (?i) ignores case).',
    params: [
      ['text', 'text', 'The text'],
      ['pattern', 'text', 'A regular expression (at most 500 characters; nested repeats are refused)'],
    ],
    returns: 'boolean',
    examples: [['REGEX_MATCH("E11.9", "^E1[0-4]")', true, 'An ICD-10 diabetes code']],
    call: ([t, p]) => safeRegex(toText(p), false).test(checkInput(toText(t))),
  },
  {
    name: 'REGEX_EXTRACT',
    description: 'The first match of the regular expression (its first group when it has one); #N/A when nothing matches.',
    params: [
      ['text', 'text', 'The text'],
      ['pattern', 'text', 'A regular expression'],
    ],
    returns: 'text',
    examples: [['REGEX_EXTRACT("BP 120/80 mmHg", "(\\\\d+)/")', '120', 'The first group']],
    call: ([t, p]) => {
      const m = safeRegex(toText(p), false).exec(checkInput(toText(t)))
      if (!m) return fail('NA', 'no match')
      return m.length > 1 ? (m[1] ?? '') : m[0]
    },
  },
  {
    name: 'REGEX_REPLACE',
    description: 'Replaces every match of the regular expression; $1, $2 … insert groups.',
    params: [
      ['text', 'text', 'The text'],
      ['pattern', 'text', 'A regular expression'],
      ['replacement', 'text', 'The replacement ($1 for the first group)'],
    ],
    returns: 'text',
    examples: [['REGEX_REPLACE("2024-03-15", "(\\\\d+)-(\\\\d+)-(\\\\d+)", "$3/$2/$1")', '15/03/2024', 'Reorders a date']],
    call: ([t, p, r]) => long(checkInput(toText(t)).replace(safeRegex(toText(p), true), toText(r))),
  },
])
