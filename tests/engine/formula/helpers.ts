import { type CellResult, compileFormula } from '../../../src/engine/formula/index.ts'

/** A fixed clock: 15 March 2024, 10:30 UTC (a Friday). */
export const clock = { now: () => new Date('2024-03-15T10:30:00Z') }

/** Evaluates a formula once against optional cells and a source record. */
export function run(formula: string, cells: Record<string, unknown> = {}, record?: object): CellResult {
  return compileFormula(formula).evaluate({ cells, record }, clock)
}

/** The value of a formula, failing the test with the cell error when there is one. */
export function value(formula: string, cells: Record<string, unknown> = {}, record?: object): unknown {
  const out = run(formula, cells, record)
  if (out.error) throw new Error(`${formula}: ${out.error.code} ${out.error.message}`)
  return out.value
}

/** The error code of a formula's cell (undefined when it has none). */
export const code = (formula: string, cells: Record<string, unknown> = {}) => run(formula, cells).error?.code
