/** The view filter operators (spec §2.7) shared by cohort rules and views. */
export const FILTER_OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'startsWith',
  'endsWith',
  'greaterThan',
  'lessThan',
  'greaterThanOrEqual',
  'lessThanOrEqual',
  'between',
  'notBetween',
  'in',
  'notIn',
  'isNull',
  'isNotNull',
  'isEmpty',
  'isNotEmpty',
] as const

export type FilterOperator = (typeof FILTER_OPERATORS)[number]

/** Short forms accepted on input and stored as their canonical names (CONTRACT: PUT panel). */
export const OPERATOR_ALIASES: Record<string, FilterOperator> = {
  eq: 'equals',
  ne: 'notEquals',
  gt: 'greaterThan',
  lt: 'lessThan',
  gte: 'greaterThanOrEqual',
  lte: 'lessThanOrEqual',
}

export const ACCEPTED_OPERATORS = [...FILTER_OPERATORS, ...Object.keys(OPERATOR_ALIASES)] as [string, ...string[]]

export const canonicalOperator = (op: string): FilterOperator => OPERATOR_ALIASES[op] ?? (op as FilterOperator)

/** Operators that take no value. */
export const UNARY_OPERATORS = new Set<FilterOperator>(['isNull', 'isNotNull', 'isEmpty', 'isNotEmpty'])

/** Operators whose value is a `[low, high]` pair or a list. */
export const RANGE_OPERATORS = new Set<FilterOperator>(['between', 'notBetween'])
export const LIST_OPERATORS = new Set<FilterOperator>(['in', 'notIn'])
