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

/** How conditions combine: AND/OR in either case (the web client sends `and`/`or`), kept as sent. */
export const LOGICAL_OPERATORS = ['AND', 'OR', 'and', 'or'] as const
export type LogicalOperator = (typeof LOGICAL_OPERATORS)[number]

/** OR when the operator says so in either case; AND otherwise (the default of a group). */
export const logicOf = (op: string | undefined): 'AND' | 'OR' => (op?.toUpperCase() === 'OR' ? 'OR' : 'AND')

/** Operators that take no value. */
export const UNARY_OPERATORS = new Set<FilterOperator>(['isNull', 'isNotNull', 'isEmpty', 'isNotEmpty'])

/** Operators whose value is a `[low, high]` pair or a list. */
export const RANGE_OPERATORS = new Set<FilterOperator>(['between', 'notBetween'])
export const LIST_OPERATORS = new Set<FilterOperator>(['in', 'notIn'])
