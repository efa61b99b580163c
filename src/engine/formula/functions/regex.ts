/**
 * Regular expressions of REGEX_MATCH, REGEX_EXTRACT and REGEX_REPLACE, guarded against
 * catastrophic backtracking as far as a backtracking engine allows: patterns are limited to 500
 * characters, inputs to 100,000, and patterns with a quantified group that itself contains a
 * quantifier (`(a+)+`, `(\w*)*`, `(x{1,3}){2,}`) or a back-reference are refused with #VALUE!.
 * A leading `(?i)` makes the pattern case-insensitive. Compiled patterns are memoised (bounded).
 */
import { fail } from '../errors.ts'

export const MAX_PATTERN = 500
export const MAX_INPUT = 100_000

const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,?\d*\})(?:[^()\\]|\\.)*\)(?:[+*]|\{\d+,?\d*\})/
const BACKREFERENCE = /\\[1-9]|\\k</
const memo = new Map<string, RegExp>()

/** A compiled, vetted pattern; `global` adds the g flag. */
export function safeRegex(pattern: string, global: boolean): RegExp {
  if (pattern.length > MAX_PATTERN) fail('VALUE', `regular expression longer than ${MAX_PATTERN} characters`)
  const key = `${global ? 'g' : ''}/${pattern}`
  const cached = memo.get(key)
  if (cached) {
    cached.lastIndex = 0
    return cached
  }
  let source = pattern
  let flags = global ? 'gu' : 'u'
  if (source.startsWith('(?i)')) {
    source = source.slice(4)
    flags += 'i'
  }
  if (NESTED_QUANTIFIER.test(source))
    fail('VALUE', 'regular expression with a repeated group that repeats inside (e.g. (a+)+) is refused: it can run for ever')
  if (BACKREFERENCE.test(source)) fail('VALUE', 'regular expression back-references are not supported')
  let re: RegExp
  try {
    re = new RegExp(source, flags)
  } catch (error) {
    return fail('VALUE', `invalid regular expression: ${(error as Error).message}`)
  }
  if (memo.size >= 256) memo.delete(memo.keys().next().value as string)
  memo.set(key, re)
  return re
}

export function checkInput(text: string): string {
  if (text.length > MAX_INPUT) fail('VALUE', `text longer than ${MAX_INPUT} characters for a regular expression`)
  return text
}
