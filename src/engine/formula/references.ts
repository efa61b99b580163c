/**
 * Column references of formulas (FORMULAS.md "Syntax", "Dependencies and cycles"): extraction,
 * rewriting on rename, closest-name suggestions, cycle search and the check of a sent
 * `dependencies` list. Built on the lexer, so text literals and escapes are honoured exactly.
 */
import type { ExpressionError } from './errors.ts'
import { lex } from './lexer.ts'

export interface Reference {
  name: string
  position: number
}

/** Every `{Column Name}` reference outside text literals, with its offset. */
export function extractReferences(formula: string): Reference[] {
  return lex(formula)
    .tokens.filter((t) => t.kind === 'ref' && !t.broken)
    .map((t) => ({ name: t.value, position: t.pos }))
}

/** `{name}` as written in a formula, escaping `\` and `}`. */
export const formatReference = (name: string) => `{${name.replace(/\\/g, '\\\\').replace(/\}/g, '\\}')}}`

/** The formula with every reference to `from` rewritten to `to` (a cascading rename). */
export function renameReference(formula: string, from: string, to: string): string {
  let out = ''
  let last = 0
  for (const t of lex(formula).tokens) {
    if (t.kind !== 'ref' || t.broken || t.value !== from) continue
    out += formula.slice(last, t.pos) + formatReference(to)
    last = t.end
  }
  return out + formula.slice(last)
}

/**
 * The closest candidate to `name` by edit distance (a swap of two neighbours is one edit), ignoring case; undefined when none is
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

/** The exact difference between the derived dependencies and a sent list (order free). */
export function dependencyDifference(
  derived: readonly string[],
  sent: readonly string[],
): { missing: string[]; extra: string[] } {
  const listed = new Set(sent)
  const wanted = new Set(derived)
  return { missing: derived.filter((d) => !listed.has(d)), extra: [...listed].filter((d) => !wanted.has(d)) }
}

/**
 * A `dependencies` list sent with a formula (FORMULAS.md "Dependencies and cycles"): it must name
 * every referenced column and every source path the formula reads, and no column the formula
 * does not reference. Extra entries that name no column are accepted as declared source-record
 * dependencies (e.g. paths read inside FHIRPATH("...")). One error per problem, naming them.
 */
export function checkDependencies(
  references: readonly string[],
  dependencies: readonly string[],
  columnNames: ReadonlySet<string>,
  sourcePaths: readonly string[] = [],
): ExpressionError[] {
  const { missing, extra } = dependencyDifference([...references, ...sourcePaths], dependencies)
  const missingColumns = missing.filter((m) => references.includes(m))
  const missingPaths = missing.filter((m) => !references.includes(m))
  const extraColumns = extra.filter((d) => columnNames.has(d))
  const errors: ExpressionError[] = []
  const names = (list: string[]) => list.map(formatReference).join(', ')
  if (missingColumns.length > 0) {
    errors.push({
      type: 'reference',
      message: `dependencies must list every column the formula references; missing: ${names(missingColumns)}`,
    })
  }
  if (missingPaths.length > 0) {
    errors.push({
      type: 'reference',
      message: `dependencies must list every source path the formula reads; missing: ${missingPaths.join(', ')}`,
    })
  }
  if (extraColumns.length > 0) {
    errors.push({
      type: 'reference',
      message: `dependencies name columns the formula does not reference: ${names(extraColumns)}`,
    })
  }
  return errors
}

/** Edit distance counting an adjacent transposition as one edit (optimal string alignment). */
function levenshtein(a: string, b: string): number {
  if (a === b) return 0
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, k) => k)]
  for (let x = 1; x <= a.length; x++) {
    const cur = [x]
    for (let y = 1; y <= b.length; y++) {
      cur[y] = Math.min(rows[x - 1][y] + 1, cur[y - 1] + 1, rows[x - 1][y - 1] + (a[x - 1] === b[y - 1] ? 0 : 1))
      if (x > 1 && y > 1 && a[x - 1] === b[y - 2] && a[x - 2] === b[y - 1]) cur[y] = Math.min(cur[y], rows[x - 2][y - 2] + 1)
    }
    rows.push(cur)
  }
  return rows[a.length][b.length]
}
