import type { CellKind } from '../cells/coerce.ts'
import { type AggregateFunction, aggregateApplies, operatorApplies, operatorsFor } from './kinds.ts'
import {
  canonicalOperator,
  FILTER_OPERATORS,
  type FilterOperator,
  LIST_OPERATORS,
  logicOf,
  RANGE_OPERATORS,
  UNARY_OPERATORS,
} from './operators.ts'
import { type Comparand, comparand, listOf, rangeOf } from './values.ts'

/**
 * Checks view criteria against a panel's columns and turns them into resolved trees the query
 * builder compiles (DATA-ENGINE: Views over rows). Pure: problems come back as issues naming the
 * criterion (`filters[1].conditions[0].operator`), never thrown.
 */

/** A column as filters see it: its id (the cell key), name and kind of value. */
export interface ColumnRef {
  id: number
  name: string
  kind: CellKind
  /**
   * A virtual column of the row's work state (`_status`, `_overdue`, …; docs/worklist.md): its
   * value is computed from the work state at `now`, with the panel's `done` statuses. Its id is negative.
   */
  virtual?: { now: string; done: readonly string[] }
}

export interface FilterIssue {
  path: string
  message: string
}

export type FilterNode =
  | { type: 'group'; logic: 'AND' | 'OR'; children: FilterNode[] }
  | { type: 'condition'; column: ColumnRef; operator: FilterOperator; values: Comparand[] }

export interface CriterionInput {
  columnTitle?: string
  operator?: string
  value?: unknown
  logicalOperator?: string
  conditions?: CriterionInput[]
}

export interface CohortRuleInput {
  conditions: { field: string; operator: string; value?: unknown }[]
  logic: string
}

/**
 * A criterion is a group when it has conditions, or `conditions` and no column (an empty group,
 * which constrains nothing); else it is a condition on its column.
 */
export const isFilterGroup = (c: { columnTitle?: string; conditions?: unknown[] }): boolean =>
  (c.conditions?.length ?? 0) > 0 || (c.conditions !== undefined && c.columnTitle === undefined)

export type ColumnLookup = (name: string) => ColumnRef | undefined

/**
 * A list of FilterCriteria as one AND group. A criterion with non-empty `conditions` is a group
 * of its children combined with its `logicalOperator` (default AND); its own column is not read.
 */
export function resolveFilters(list: CriterionInput[], lookup: ColumnLookup, path: string, issues: FilterIssue[]): FilterNode {
  return { type: 'group', logic: 'AND', children: list.map((c, i) => resolveCriterion(c, lookup, `${path}[${i}]`, issues)) }
}

/** The panel's cohort rule as a group with its `logic`; an empty rule selects every row. */
export function resolveCohortRule(
  rule: CohortRuleInput | null | undefined,
  lookup: ColumnLookup,
  issues: FilterIssue[],
): FilterNode {
  const conditions = rule?.conditions ?? []
  return {
    type: 'group',
    logic: logicOf(rule?.logic),
    children: conditions.map((c, i) =>
      condition(
        { column: c.field, operator: c.operator, value: c.value },
        lookup,
        { column: `cohortRule.conditions[${i}].field`, rest: `cohortRule.conditions[${i}]` },
        issues,
      ),
    ),
  }
}

/** A column by name for a sort, group or aggregation entry; pushes an issue when unknown. */
export function resolveColumn(name: string, lookup: ColumnLookup, path: string, issues: FilterIssue[]): ColumnRef | undefined {
  const column = lookup(name)
  if (!column) issues.push({ path, message: `unknown column "${name}"` })
  return column
}

/** Checks that an aggregation function applies to the column's kind. */
export function checkAggregate(fn: AggregateFunction, column: ColumnRef, path: string, issues: FilterIssue[]): boolean {
  if (aggregateApplies(fn, column.kind)) return true
  issues.push({ path, message: `${fn} needs a number column; "${column.name}" holds ${column.kind} values` })
  return false
}

// --- Internal helpers ---

function resolveCriterion(c: CriterionInput, lookup: ColumnLookup, path: string, issues: FilterIssue[]): FilterNode {
  if (isFilterGroup(c)) {
    const children = (c.conditions ?? []).map((child, i) => resolveCriterion(child, lookup, `${path}.conditions[${i}]`, issues))
    return { type: 'group', logic: children.length > 0 ? logicOf(c.logicalOperator) : 'AND', children }
  }
  return condition(
    { column: c.columnTitle ?? '', operator: c.operator ?? '', value: c.value },
    lookup,
    { column: `${path}.columnTitle`, rest: path },
    issues,
  )
}

const NOTHING: FilterNode = { type: 'group', logic: 'OR', children: [] }

function condition(
  c: { column: string; operator: string; value: unknown },
  lookup: ColumnLookup,
  paths: { column: string; rest: string },
  issues: FilterIssue[],
): FilterNode {
  const operator = canonicalOperator(c.operator)
  if (!(FILTER_OPERATORS as readonly string[]).includes(operator)) {
    issues.push({ path: `${paths.rest}.operator`, message: `unknown operator "${c.operator}"` })
    return NOTHING
  }
  const column = lookup(c.column)
  if (!column) {
    issues.push({ path: paths.column, message: `unknown column "${c.column}"` })
    return NOTHING
  }
  if (!operatorApplies(operator, column.kind)) {
    issues.push({
      path: `${paths.rest}.operator`,
      message: `${operator} cannot apply to ${column.kind} column "${column.name}" (use one of ${operatorsFor(column.kind).join(', ')})`,
    })
    return NOTHING
  }
  const values = valuesOf(operator, column.kind, c.value)
  if (!values.ok) {
    issues.push({ path: `${paths.rest}.value`, message: `${operator} on "${column.name}": ${values.message}` })
    return NOTHING
  }
  return { type: 'condition', column, operator, values: values.value }
}

function valuesOf(
  operator: FilterOperator,
  kind: CellKind,
  raw: unknown,
): { ok: true; value: Comparand[] } | { ok: false; message: string } {
  if (UNARY_OPERATORS.has(operator)) return { ok: true, value: [] }
  if (RANGE_OPERATORS.has(operator)) return rangeOf(raw, kind, operator)
  if (LIST_OPERATORS.has(operator)) return listOf(raw, kind, operator)
  const one = comparand(raw, kind, operator)
  return one.ok ? { ok: true, value: [one.value] } : one
}
