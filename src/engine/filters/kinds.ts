import type { CellKind } from '../cells/coerce.ts'
import { FILTER_OPERATORS, type FilterOperator } from './operators.ts'

/**
 * Which filter operators and aggregation functions apply to which kind of cell (DATA-ENGINE:
 * Views over rows — an operator that cannot apply to a column's type is a 400 naming the criterion).
 */

const TEXT_PATTERN = new Set<FilterOperator>(['contains', 'notContains', 'startsWith', 'endsWith'])
const BOOLEAN_OPERATORS = new Set<FilterOperator>([
  'equals',
  'notEquals',
  'in',
  'notIn',
  'isNull',
  'isNotNull',
  'isEmpty',
  'isNotEmpty',
])

/** True when `operator` can filter a column holding `kind` values. */
export function operatorApplies(operator: FilterOperator, kind: CellKind): boolean {
  if (kind === 'number') return !TEXT_PATTERN.has(operator)
  if (kind === 'boolean') return BOOLEAN_OPERATORS.has(operator)
  return true
}

/** The operators a kind accepts, for error messages. */
export const operatorsFor = (kind: CellKind): FilterOperator[] => FILTER_OPERATORS.filter((op) => operatorApplies(op, kind))

export const AGGREGATE_FUNCTIONS = ['count', 'sum', 'average', 'min', 'max', 'median', 'distinct'] as const
export type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number]

const NUMERIC_ONLY = new Set<AggregateFunction>(['sum', 'average', 'median'])

/** sum, average and median need numbers; count, distinct, min and max apply to every kind. */
export const aggregateApplies = (fn: AggregateFunction, kind: CellKind): boolean => !NUMERIC_ONLY.has(fn) || kind === 'number'

/** Kinds whose values compare as text (case-insensitively). */
export const isTextual = (kind: CellKind): boolean => kind === 'text' || kind === 'list' || kind === 'json'

/** Kinds whose values are ISO date strings. */
export const isDateKind = (kind: CellKind): boolean => kind === 'date' || kind === 'datetime'
