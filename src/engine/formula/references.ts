/**
 * Column references of formulas (FORMULAS.md "Syntax", "Dependencies and cycles", "Errors"): pure
 * code, no Hono, no drizzle. This is the seam the full lexer/parser/type checker replaces later;
 * what it reports now is only what a scan can tell honestly: unterminated `{` references and text
 * literals, unbalanced parentheses, an empty formula, unknown columns and bare words, and cycles.
 */

export type ExpressionErrorType = 'syntax' | 'reference' | 'type' | 'circular'

/** spec §2.8 ExpressionError; `position` is the 0-based character offset in the formula. */
export interface ExpressionError {
  type: ExpressionErrorType
  message: string
  position?: number
  suggestion?: string
}

export interface Reference {
  name: string
  position: number
}

/** A column the formula may refer to. `formula` (calculated columns) gives its own references. */
export interface FormulaColumn {
  name: string
  type?: string
  formula?: string | null
}

export interface AnalyzeOptions {
  /** The other columns of the panel (not the one whose formula is analysed). */
  columns: readonly FormulaColumn[]
  /** The name of the column that holds the formula: referring back to it is circular. */
  selfName?: string
}

export interface FormulaAnalysis {
  /** Distinct names of the `{…}` references, in order of first appearance. */
  references: string[]
  /** Every problem found, not only the first. */
  errors: ExpressionError[]
}

/** Every `{Column Name}` reference outside text literals, with its offset. */
export function extractReferences(formula: string): Reference[] {
  return scan(formula).refs.map(({ name, position }) => ({ name, position }))
}

/** `{name}` as written in a formula, escaping `\` and `}`. */
export const formatReference = (name: string) => `{${name.replace(/\\/g, '\\\\').replace(/\}/g, '\\}')}}`

/** The formula with every reference to `from` rewritten to `to` (a cascading rename). */
export function renameReference(formula: string, from: string, to: string): string {
  let out = ''
  let last = 0
  for (const ref of scan(formula).refs) {
    if (ref.name !== from) continue
    out += formula.slice(last, ref.position) + formatReference(to)
    last = ref.end
  }
  return out + formula.slice(last)
}

/**
 * The closest candidate to `name` by Levenshtein distance, ignoring case; undefined when none is
 * within about a third of the longer name's length (at least 1 edit).
 */
export function suggestClosest(name: string, candidates: Iterable<string>): string | undefined {
  const target = name.toLowerCase()
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of candidates) {
    const distance = levenshtein(target, candidate.toLowerCase())
    const limit = Math.max(1, Math.floor(Math.max(target.length, candidate.length) / 3))
    if (distance <= limit && distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/**
 * A cycle of the dependency graph (node → the nodes it references) as names, first and last equal
 * (`['A', 'B', 'A']`), or null. Nodes are visited in the map's order, so put the node of interest
 * first to get the cycle through it. Names that are not keys are leaves.
 */
export function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const done = new Set<string>()
  const path: string[] = []
  const onPath = new Set<string>()
  const visit = (node: string): string[] | null => {
    if (onPath.has(node)) return [...path.slice(path.indexOf(node)), node]
    if (done.has(node)) return null
    path.push(node)
    onPath.add(node)
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next)
      if (cycle) return cycle
    }
    path.pop()
    onPath.delete(node)
    done.add(node)
    return null
  }
  for (const node of graph.keys()) {
    const cycle = visit(node)
    if (cycle) return cycle
  }
  return null
}

/**
 * Checks a formula against the columns of its panel (FORMULAS.md "Dependencies and cycles"):
 * syntax the scan can see, references to unknown columns (with the closest name as suggestion),
 * bare words (a column name needs braces), and cycles through calculated columns.
 */
export function analyzeFormula(formula: string, options: AnalyzeOptions): FormulaAnalysis {
  const { refs, words, errors } = scan(formula)
  const names = options.columns.map((c) => c.name)
  const known = new Set(names)
  const self = options.selfName
  const suggestion = (name: string) => {
    const close = suggestClosest(name, names)
    return close === undefined ? {} : { suggestion: `did you mean ${formatReference(close)}?` }
  }
  if (formula.trim() === '') errors.push({ type: 'syntax', message: 'Formula is empty', position: 0 })
  for (const ref of refs) {
    if (ref.name === self || known.has(ref.name)) continue
    errors.push({
      type: 'reference',
      message: `Unknown column ${formatReference(ref.name)}`,
      position: ref.position,
      ...suggestion(ref.name),
    })
  }
  for (const word of words) {
    errors.push({
      type: 'reference',
      message: `Unknown name "${word.word}": column references are written in braces, e.g. ${formatReference(word.word)}`,
      position: word.position,
      ...suggestion(word.word),
    })
  }
  const references = [...new Set(refs.map((r) => r.name))]
  if (self !== undefined) {
    const graph = new Map<string, string[]>([[self, references.filter((r) => r === self || known.has(r))]])
    for (const column of options.columns) {
      if (column.formula && !graph.has(column.name))
        graph.set(column.name, [...new Set(extractReferences(column.formula).map((r) => r.name))])
    }
    const cycle = findCycle(graph)
    if (cycle) {
      const first = refs.find((r) => r.name === cycle[1])
      errors.push({
        type: 'circular',
        message: `Circular reference: ${cycle.map(formatReference).join(' → ')}`,
        ...(first ? { position: first.position } : {}),
      })
    }
  }
  errors.sort((a, b) => (a.position ?? 0) - (b.position ?? 0))
  return { references, errors }
}

/**
 * A `dependencies` list sent with a formula (FORMULAS.md "Dependencies and cycles"): it must name
 * every referenced column and no column the formula does not reference; other entries (source
 * paths such as `Patient.birthDate`) are allowed. One error per problem, naming the columns.
 */
export function checkDependencies(
  references: readonly string[],
  dependencies: readonly string[],
  columnNames: ReadonlySet<string>,
): ExpressionError[] {
  const listed = new Set(dependencies)
  const missing = references.filter((r) => !listed.has(r))
  const extra = [...listed].filter((d) => columnNames.has(d) && !references.includes(d))
  const errors: ExpressionError[] = []
  const names = (list: string[]) => list.map(formatReference).join(', ')
  if (missing.length > 0) {
    errors.push({
      type: 'reference',
      message: `dependencies must list every column the formula references; missing: ${names(missing)}`,
    })
  }
  if (extra.length > 0) {
    errors.push({ type: 'reference', message: `dependencies name columns the formula does not reference: ${names(extra)}` })
  }
  return errors
}

// --- Internal helpers ---

interface RefToken extends Reference {
  /** Offset just past the closing `}`. */
  end: number
}

interface BareWord {
  word: string
  position: number
}

const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9'
const isIdentStart = (ch: string | undefined) => ch !== undefined && /[A-Za-z_]/.test(ch)
const isIdentPart = (ch: string | undefined) => ch !== undefined && /[A-Za-z0-9_]/.test(ch)
const LITERAL_WORDS = new Set(['TRUE', 'FALSE'])

/**
 * One pass over the formula: references, bare words (a single identifier that is not a function
 * call, TRUE/FALSE or part of a dotted source path), and the syntax errors a scan can see.
 */
function scan(formula: string): { refs: RefToken[]; words: BareWord[]; errors: ExpressionError[] } {
  const refs: RefToken[] = []
  const words: BareWord[] = []
  const errors: ExpressionError[] = []
  const open: number[] = []
  const n = formula.length
  let i = 0
  scanning: while (i < n) {
    const ch = formula[i]
    if (ch === '{') {
      const start = i++
      let name = ''
      for (;;) {
        if (i >= n) {
          errors.push({ type: 'syntax', message: 'Unterminated column reference: missing }', position: start })
          break scanning
        }
        const c = formula[i]
        if (c === '\\' && (formula[i + 1] === '}' || formula[i + 1] === '\\')) {
          name += formula[i + 1]
          i += 2
        } else if (c === '}') {
          i++
          break
        } else {
          name += c
          i++
        }
      }
      refs.push({ name, position: start, end: i })
    } else if (ch === '"' || ch === "'") {
      const start = i++
      for (;;) {
        if (i >= n) {
          errors.push({ type: 'syntax', message: `Unterminated text literal: missing ${ch}`, position: start })
          break scanning
        }
        if (formula[i] === '\\') i += 2
        else if (formula[i++] === ch) break
      }
    } else if (ch === '(') {
      open.push(i++)
    } else if (ch === ')') {
      if (open.pop() === undefined) errors.push({ type: 'syntax', message: 'Unexpected ) without a matching (', position: i })
      i++
    } else if (isDigit(ch) || (ch === '.' && isDigit(formula[i + 1]))) {
      i = skipNumber(formula, i)
    } else if (isIdentStart(ch)) {
      const start = i
      while (isIdentPart(formula[i])) i++
      let dotted = formula[start - 1] === '.'
      while (formula[i] === '.' && isIdentStart(formula[i + 1])) {
        dotted = true
        i++
        while (isIdentPart(formula[i])) i++
      }
      const word = formula.slice(start, i)
      let j = i
      while (j < n && /\s/.test(formula[j])) j++
      const call = formula[j] === '('
      if (!dotted && !call && !LITERAL_WORDS.has(word.toUpperCase())) words.push({ word, position: start })
    } else {
      i++
    }
  }
  for (const position of open) errors.push({ type: 'syntax', message: 'Unclosed (: missing )', position })
  return { refs, words, errors }
}

/** Skips `12`, `3.5`, `.5`, `1e-3`; returns the offset after the number. */
function skipNumber(s: string, i: number): number {
  while (isDigit(s[i])) i++
  if (s[i] === '.') {
    i++
    while (isDigit(s[i])) i++
  }
  if ((s[i] === 'e' || s[i] === 'E') && (isDigit(s[i + 1]) || ((s[i + 1] === '+' || s[i + 1] === '-') && isDigit(s[i + 2])))) {
    i += 2
    while (isDigit(s[i])) i++
  }
  return i
}

function levenshtein(a: string, b: string): number {
  if (a === b) return 0
  let prev = Array.from({ length: b.length + 1 }, (_, k) => k)
  for (let x = 1; x <= a.length; x++) {
    const cur = [x]
    for (let y = 1; y <= b.length; y++) {
      cur[y] = Math.min(prev[y] + 1, cur[y - 1] + 1, prev[y - 1] + (a[x - 1] === b[y - 1] ? 0 : 1))
    }
    prev = cur
  }
  return prev[b.length]
}
