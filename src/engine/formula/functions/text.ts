/** Text functions (Excel semantics; positions are 1-based as in Excel). */
import { fail } from '../errors.ts'
import { compare, flatten, isBlank, toBoolean, toNumber, toText, type Value } from '../values.ts'
import { category } from './types.ts'

const MAX_TEXT = 32_767
const count = (v: Value, what: string) => {
  const n = Math.trunc(toNumber(v))
  return n < 0 ? fail('VALUE', `${what} must not be negative`) : n
}
const start = (v: Value) => {
  const n = Math.trunc(toNumber(v))
  return n < 1 ? fail('VALUE', 'start must be 1 or more') : n
}
const long = (s: string) => (s.length > MAX_TEXT ? fail('VALUE', `text longer than ${MAX_TEXT} characters`) : s)
const wildcard = (pattern: string) =>
  new RegExp(
    pattern.replace(/~([*?~])|([*?])|[.+^${}()|[\]\\]/g, (m, esc, wild) =>
      esc ? `\\${esc}` : wild ? (wild === '*' ? '[\\s\\S]*' : '[\\s\\S]') : `\\${m}`,
    ),
    'i',
  )

export const textFunctions = category('text', [
  {
    name: 'CONCAT',
    description: 'Joins texts (and the elements of lists) into one text.',
    params: [['text...', 'any', 'Texts, numbers or lists to join']],
    returns: 'text',
    examples: [['CONCAT("Dr. ", "Ada", " ", "Lovelace")', 'Dr. Ada Lovelace', 'Joins four texts']],
    call: (args) => long(flatten(args).map(toText).join('')),
  },
  {
    name: 'CONCATENATE',
    description: 'Joins texts into one text (the older name of CONCAT).',
    params: [['text...', 'any', 'Texts or numbers to join']],
    returns: 'text',
    examples: [['CONCATENATE("BP ", 120, "/", 80)', 'BP 120/80', 'Numbers become text']],
    call: (args) => long(flatten(args).map(toText).join('')),
  },
  {
    name: 'LEFT',
    description: 'The first characters of a text.',
    params: [
      ['text', 'text', 'The text'],
      ['count?', 'number', 'How many characters (default 1)'],
    ],
    returns: 'text',
    examples: [['LEFT("Hypertension", 5)', 'Hyper', 'The first five characters']],
    call: ([t, n = 1]) => toText(t).slice(0, count(n, 'count')),
  },
  {
    name: 'RIGHT',
    description: 'The last characters of a text.',
    params: [
      ['text', 'text', 'The text'],
      ['count?', 'number', 'How many characters (default 1)'],
    ],
    returns: 'text',
    examples: [['RIGHT("ICD-10", 2)', '10', 'The last two characters']],
    call: ([t, n = 1]) => {
      const k = count(n, 'count')
      return k === 0 ? '' : toText(t).slice(-k)
    },
  },
  {
    name: 'MID',
    description: 'Characters from the middle of a text, starting at a 1-based position.',
    params: [
      ['text', 'text', 'The text'],
      ['start', 'number', 'Position of the first character (1 is the first)'],
      ['count', 'number', 'How many characters'],
    ],
    returns: 'text',
    examples: [['MID("2024-03-15", 6, 2)', '03', 'Two characters from position 6']],
    call: ([t, s, n]) => {
      const from = start(s) - 1
      return toText(t).slice(from, from + count(n, 'count'))
    },
  },
  {
    name: 'LEN',
    description: 'The number of characters of a text.',
    params: [['text', 'text', 'The text']],
    returns: 'number',
    examples: [['LEN("Aspirin")', 7, 'Seven characters']],
    call: ([t]) => toText(t).length,
  },
  {
    name: 'LOWER',
    description: 'The text in lower case.',
    params: [['text', 'text', 'The text']],
    returns: 'text',
    examples: [['LOWER("MRN-ABC")', 'mrn-abc', 'Lower case']],
    call: ([t]) => toText(t).toLowerCase(),
  },
  {
    name: 'UPPER',
    description: 'The text in upper case.',
    params: [['text', 'text', 'The text']],
    returns: 'text',
    examples: [['UPPER("mrn-abc")', 'MRN-ABC', 'Upper case']],
    call: ([t]) => toText(t).toUpperCase(),
  },
  {
    name: 'PROPER',
    description: 'Capitalises the first letter of every word and lower-cases the rest.',
    params: [['text', 'text', 'The text']],
    returns: 'text',
    examples: [['PROPER("jane DOE-smith")', 'Jane Doe-Smith', 'Each word capitalised']],
    call: ([t]) => toText(t).replace(/\p{L}+/gu, (w) => w[0].toUpperCase() + w.slice(1).toLowerCase()),
  },
  {
    name: 'TRIM',
    description: 'Removes spaces at both ends and collapses runs of inner spaces to one.',
    params: [['text', 'text', 'The text']],
    returns: 'text',
    examples: [['TRIM("  blood   pressure ")', 'blood pressure', 'Extra spaces removed']],
    call: ([t]) => toText(t).trim().replace(/ {2,}/g, ' '),
  },
  {
    name: 'SUBSTITUTE',
    description: 'Replaces occurrences of a text (all of them, or only the nth) by another; case-sensitive.',
    params: [
      ['text', 'text', 'The text'],
      ['old', 'text', 'The text to replace'],
      ['new', 'text', 'The replacement'],
      ['instance?', 'number', 'Which occurrence to replace (default: all)'],
    ],
    returns: 'text',
    examples: [
      ['SUBSTITUTE("a-b-c", "-", "/")', 'a/b/c', 'Every occurrence'],
      ['SUBSTITUTE("a-b-c", "-", "/", 2)', 'a-b/c', 'Only the second'],
    ],
    call: ([t, o, r, inst]) => {
      const text = toText(t)
      const old = toText(o)
      const rep = toText(r)
      if (old === '') return text
      if (inst === undefined) return long(text.split(old).join(rep))
      const nth = Math.trunc(toNumber(inst))
      if (nth < 1) return fail('VALUE', 'instance must be 1 or more')
      let at = -1
      for (let k = 0; k < nth; k++) {
        at = text.indexOf(old, at + 1)
        if (at < 0) return text
      }
      return text.slice(0, at) + rep + text.slice(at + old.length)
    },
  },
  {
    name: 'REPLACE',
    description: 'Replaces count characters starting at a 1-based position by another text.',
    params: [
      ['text', 'text', 'The text'],
      ['start', 'number', 'Position of the first character to replace'],
      ['count', 'number', 'How many characters to replace'],
      ['new', 'text', 'The replacement'],
    ],
    returns: 'text',
    examples: [['REPLACE("2024-XX-15", 6, 2, "03")', '2024-03-15', 'Two characters replaced']],
    call: ([t, s, n, r]) => {
      const text = toText(t)
      const from = start(s) - 1
      return long(text.slice(0, from) + toText(r) + text.slice(from + count(n, 'count')))
    },
  },
  {
    name: 'FIND',
    description: 'The 1-based position of a text inside another, case-sensitive; #VALUE! when absent.',
    params: [
      ['find', 'text', 'The text to look for'],
      ['within', 'text', 'The text to search'],
      ['start?', 'number', 'Position to start at (default 1)'],
    ],
    returns: 'number',
    examples: [['FIND("b", "abcabc", 3)', 5, 'First "b" from position 3']],
    call: ([f, w, s = 1]) => {
      const at = toText(w).indexOf(toText(f), start(s) - 1)
      return at < 0 ? fail('VALUE', `"${toText(f)}" not found`) : at + 1
    },
  },
  {
    name: 'SEARCH',
    description: 'Like FIND but case-insensitive, with wildcards * and ? (~ escapes them).',
    params: [
      ['find', 'text', 'The text or wildcard pattern to look for'],
      ['within', 'text', 'The text to search'],
      ['start?', 'number', 'Position to start at (default 1)'],
    ],
    returns: 'number',
    examples: [['SEARCH("p?essure", "Blood Pressure")', 7, 'Case-insensitive, ? matches one character']],
    call: ([f, w, s = 1]) => {
      const from = start(s) - 1
      const m = wildcard(toText(f)).exec(toText(w).slice(from))
      return m ? m.index + from + 1 : fail('VALUE', `"${toText(f)}" not found`)
    },
  },
  {
    name: 'REPT',
    description: 'Repeats a text a number of times.',
    params: [
      ['text', 'text', 'The text'],
      ['times', 'number', 'How many times'],
    ],
    returns: 'text',
    examples: [['REPT("*", 3)', '***', 'Three stars']],
    call: ([t, n]) => {
      const text = toText(t)
      const k = count(n, 'times')
      return text.length * k > MAX_TEXT ? fail('VALUE', `text longer than ${MAX_TEXT} characters`) : text.repeat(k)
    },
  },
  {
    name: 'TEXTJOIN',
    description: 'Joins texts and list elements with a delimiter, optionally skipping blanks.',
    params: [
      ['delimiter', 'text', 'Put between the texts'],
      ['ignore_empty', 'boolean', 'TRUE skips blank values'],
      ['text...', 'any', 'Texts or lists to join'],
    ],
    returns: 'text',
    examples: [['TEXTJOIN(", ", TRUE, "a", "", "b")', 'a, b', 'The blank is skipped']],
    call: ([d, skip, ...rest]) => {
      const values = flatten(rest)
      const kept = toBoolean(skip) ? values.filter((v) => !isBlank(v)) : values
      return long(kept.map(toText).join(toText(d)))
    },
  },
  {
    name: 'STARTS_WITH',
    description: 'TRUE when the text starts with the prefix (case-insensitive).',
    params: [
      ['text', 'text', 'The text'],
      ['prefix', 'text', 'The beginning to test'],
    ],
    returns: 'boolean',
    examples: [['STARTS_WITH("E11.9", "e11")', true, 'Case does not matter']],
    call: ([t, p]) => toText(t).toLowerCase().startsWith(toText(p).toLowerCase()),
  },
  {
    name: 'ENDS_WITH',
    description: 'TRUE when the text ends with the suffix (case-insensitive).',
    params: [
      ['text', 'text', 'The text'],
      ['suffix', 'text', 'The end to test'],
    ],
    returns: 'boolean',
    examples: [['ENDS_WITH("report.PDF", ".pdf")', true, 'Case does not matter']],
    call: ([t, s]) => toText(t).toLowerCase().endsWith(toText(s).toLowerCase()),
  },
  {
    name: 'CONTAINS',
    description:
      'For a text: TRUE when it contains the search text (case-insensitive). For a list: TRUE when an element equals the value.',
    params: [
      ['within', 'text|array', 'A text or a list'],
      ['search', 'any', 'The text or value to look for'],
    ],
    returns: 'boolean',
    examples: [
      ['CONTAINS("Type 2 Diabetes", "diabetes")', true, 'Substring, case-insensitive'],
      ['CONTAINS(SPLIT("a,b,c", ","), "B")', true, 'An element of a list'],
    ],
    call: ([w, s]) => {
      if (Array.isArray(w)) return flatten(w).some((v) => compare(v, s) === 0)
      return toText(w).toLowerCase().includes(toText(s).toLowerCase())
    },
  },
  {
    name: 'EXACT',
    description: 'TRUE when two texts are identical, case included.',
    params: [
      ['text1', 'text', 'First text'],
      ['text2', 'text', 'Second text'],
    ],
    returns: 'boolean',
    examples: [['EXACT("Male", "male")', false, 'Case differs']],
    call: ([a, b]) => toText(a) === toText(b),
  },
  {
    name: 'SPLIT',
    description: 'Splits a text at every delimiter into a list.',
    params: [
      ['text', 'text', 'The text'],
      ['delimiter', 'text', 'Where to split'],
    ],
    returns: 'array',
    examples: [['SPLIT("a;b;c", ";")', ['a', 'b', 'c'], 'Three elements']],
    call: ([t, d]) => {
      const text = toText(t)
      const delimiter = toText(d)
      return text === '' ? [] : delimiter === '' ? [...text] : text.split(delimiter)
    },
  },
])
