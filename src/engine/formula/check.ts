/**
 * Static checks of a formula (FORMULAS.md "Dependencies and cycles", "Errors"): syntax, references
 * (unknown columns, bare words and unknown functions, with the closest name as suggestion), types,
 * cycles through calculated columns, and the derived dependencies. Every error is reported, ordered
 * by position. Also the evaluation order of a panel's calculated columns.
 */
import type { ValueType } from './ast.ts'
import { functionNames, lookupFunction } from './catalogue.ts'
import type { ExpressionError } from './errors.ts'
import { columnValueType, TypeChecker } from './infer.ts'
import { parse } from './parser.ts'
import { checkDependencies, extractReferences, findCycle, formatReference, suggestClosest } from './references.ts'

/** A column a formula may refer to; `formula` (calculated columns) gives its own references. */
export interface FormulaColumn {
  name: string
  type?: string | null
  formula?: string | null
  columnType?: string | null
}

export interface AnalyzeOptions {
  /** The columns of the panel; the one named `selfName`, if listed, is ignored. */
  columns: readonly FormulaColumn[]
  /** The name of the column that holds the formula: referring back to it is circular. */
  selfName?: string
  /**
   * Parse FHIRPATH("…") arguments (default true): needs the FHIRPath engine loaded first
   * (loadFhirPathEngineFor with formulaFhirPaths). A caller that wants only the return type (the
   * kind of a column's cells) passes false and never needs the engine.
   */
  checkFhirPaths?: boolean
}

export interface FormulaAnalysis {
  /** Distinct names of the `{…}` references, in order of first appearance. */
  references: string[]
  /** Distinct source paths (`Patient.birthDate`) read by the formula. */
  sourcePaths: string[]
  /** references then source paths: what `dependencies` must hold. */
  dependencies: string[]
  /** Every problem found, ordered by position. */
  errors: ExpressionError[]
  /** The inferred type of the result (`any` when unknown or when the formula does not parse). */
  returnType: Exclude<ValueType, 'blank'>
}

/** Runs every static check of FORMULAS.md on a formula. */
export function analyzeFormula(formula: string, options: AnalyzeOptions): FormulaAnalysis {
  const self = options.selfName
  const others = options.columns.filter((c) => c.name !== self)
  const byName = new Map(others.map((c) => [c.name, c]))
  const { ast, tokens, errors } = parse(formula)
  const suggest = (name: string, candidates: Iterable<string>, format: (s: string) => string) => {
    const close = suggestClosest(name, candidates)
    return close === undefined ? {} : { suggestion: `did you mean ${format(close)}?` }
  }
  const references: string[] = []
  const sourcePaths: string[] = []
  tokens.forEach((t, i) => {
    const call = tokens[i + 1]?.kind === '('
    if (t.kind === 'ref' && !t.broken) {
      if (!references.includes(t.value)) references.push(t.value)
      if (t.value !== self && !byName.has(t.value)) {
        errors.push({
          type: 'reference',
          message: `Unknown column ${formatReference(t.value)}`,
          position: t.pos,
          ...suggest(t.value, byName.keys(), formatReference),
        })
      }
    } else if (t.kind === 'ident' && call && !lookupFunction(t.value)) {
      errors.push({
        type: 'reference',
        message: `Unknown function ${t.value}`,
        position: t.pos,
        ...suggest(t.value, functionNames(), (s) => s),
      })
    } else if (t.kind === 'ident' && !call && t.dotted) {
      if (!sourcePaths.includes(t.value)) sourcePaths.push(t.value)
    } else if (t.kind === 'ident' && !call && !/^(true|false)$/i.test(t.value)) {
      errors.push({
        type: 'reference',
        message: `Unknown name "${t.value}": column references are written in braces, e.g. ${formatReference(t.value)}`,
        position: t.pos,
        ...suggest(t.value, byName.keys(), formatReference),
      })
    }
  })
  let returnType: ValueType = 'any'
  if (ast) {
    const typeOf = (name: string) => (name === self ? 'any' : columnValueType(byName.get(name)?.type))
    const checker = new TypeChecker(formula, typeOf, options.checkFhirPaths)
    returnType = checker.infer(ast)
    errors.push(...checker.errors)
  }
  if (self !== undefined) {
    const cycle = cycleThrough(self, references, others)
    if (cycle) {
      const first = tokens.find((t) => t.kind === 'ref' && t.value === cycle[1])
      errors.push({
        type: 'circular',
        message: `Circular reference: ${cycle.map(formatReference).join(' → ')}`,
        ...(first ? { position: first.pos } : {}),
      })
    }
  }
  errors.sort((a, b) => (a.position ?? 0) - (b.position ?? 0))
  return {
    references,
    sourcePaths,
    dependencies: [...references, ...sourcePaths],
    errors,
    returnType: returnType === 'blank' ? 'any' : returnType,
  }
}

export interface ValidateInput extends AnalyzeOptions {
  formula: string
  /** A list sent by the caller: checked against the derived dependencies. */
  dependencies?: readonly string[]
}

export interface ValidateResult {
  valid: boolean
  errors: ExpressionError[]
  /** The derived dependencies (column names, then source paths). */
  dependencies: string[]
  returnType: Exclude<ValueType, 'blank'>
}

/**
 * The answer of `POST /api/formulas/validate` (FORMULAS.md "Endpoints"): every static error, plus
 * the check of a sent `dependencies` list; the dependencies answered are the derived ones.
 */
export function validateFormula(input: ValidateInput): ValidateResult {
  const analysis = analyzeFormula(input.formula, input)
  const errors = [...analysis.errors]
  if (input.dependencies !== undefined) {
    const names = new Set(input.columns.map((c) => c.name))
    if (input.selfName !== undefined) names.add(input.selfName)
    errors.push(...checkDependencies(analysis.references, input.dependencies, names, analysis.sourcePaths))
  }
  return { valid: errors.length === 0, errors, dependencies: analysis.dependencies, returnType: analysis.returnType }
}

/** The cycle through `self` (`[self, …, self]`) once it references `references`, or null. */
function cycleThrough(self: string, references: string[], others: readonly FormulaColumn[]): string[] | null {
  const known = new Set(others.map((c) => c.name))
  const graph = new Map<string, string[]>([[self, references.filter((r) => r === self || known.has(r))]])
  for (const column of others) {
    if (column.formula && !graph.has(column.name)) graph.set(column.name, distinctReferences(column.formula))
  }
  const cycle = findCycle(graph)
  return cycle && cycle[0] === self ? cycle : null
}

const distinctReferences = (formula: string) => [...new Set(extractReferences(formula).map((r) => r.name))]

/**
 * The calculated columns (those with a formula) in an order where each comes after the calculated
 * columns it references; ties keep the given order. Throws when the columns hold a cycle.
 */
export function evaluationOrder<T extends FormulaColumn>(columns: readonly T[]): T[] {
  const calculated = columns.filter((c) => c.formula)
  const byName = new Map(calculated.map((c) => [c.name, c]))
  const deps = new Map(calculated.map((c) => [c.name, distinctReferences(c.formula as string).filter((r) => byName.has(r))]))
  const placed = new Set<string>()
  const order: T[] = []
  while (order.length < calculated.length) {
    const ready = calculated.find((c) => !placed.has(c.name) && (deps.get(c.name) ?? []).every((d) => placed.has(d)))
    if (!ready) {
      const cycle = findCycle(new Map([...deps].filter(([name]) => !placed.has(name)))) ?? []
      throw new Error(`Calculated columns form a cycle: ${cycle.map(formatReference).join(' → ')}`)
    }
    placed.add(ready.name)
    order.push(ready)
  }
  return order
}
