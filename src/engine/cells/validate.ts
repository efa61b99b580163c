/**
 * Column `validation` rules (spec §2.6 ValidationRules) applied to a materialised cell: they never
 * change the value, they flag it (DATA-ENGINE: Rows — the row's `_errors` say why).
 */
export interface ValidationRules {
  required?: boolean
  minLength?: number
  maxLength?: number
  pattern?: string
  min?: number
  max?: number
  errorMessage?: string
}

/** Longest text a `pattern` is tested against, so a costly pattern cannot stall a sync. */
const MAX_PATTERN_INPUT = 10_000

/** The rule a value breaks, as a message, or undefined when it passes every rule. */
export function checkRules(value: unknown, rules: ValidationRules, pattern?: RegExp): string | undefined {
  const say = (why: string) => rules.errorMessage ?? why
  const blank = value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0)
  if (blank) return rules.required ? say('is required') : undefined
  for (const v of Array.isArray(value) ? value : [value]) {
    if (typeof v === 'string') {
      if (rules.minLength !== undefined && v.length < rules.minLength)
        return say(`must be at least ${rules.minLength} characters`)
      if (rules.maxLength !== undefined && v.length > rules.maxLength) return say(`must be at most ${rules.maxLength} characters`)
      if (pattern && (v.length > MAX_PATTERN_INPUT || !pattern.test(v))) return say(`does not match ${rules.pattern}`)
    }
    if (typeof v === 'number') {
      if (rules.min !== undefined && v < rules.min) return say(`must be at least ${rules.min}`)
      if (rules.max !== undefined && v > rules.max) return say(`must be at most ${rules.max}`)
    }
  }
  return undefined
}

/** Compiles a column's pattern once; an invalid one was refused at create, so undefined here means none. */
export function compilePattern(rules: ValidationRules | undefined): RegExp | undefined {
  if (!rules?.pattern) return undefined
  try {
    return new RegExp(rules.pattern, 'u')
  } catch {
    return undefined
  }
}
