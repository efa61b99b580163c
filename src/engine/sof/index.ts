/**
 * SQL on FHIR v2 ViewDefinitions (SQL-ON-FHIR.md, "The engine"; docs/sql-on-fhir.md): validate and
 * compile a view once (prepareView), then turn resources into rows one at a time (rowsOf, runView).
 * Pure: no HTTP, no database, the same on every runtime.
 */
export { compileView, prepareView, type ViewPlan } from './compile-view.ts'
export { type PositionedRow, positionedRowsOf, type Row, rowObject, rowsOf, runView, runViewAsync } from './run-view.ts'
export {
  type ViewColumn,
  type ViewDefinition,
  ViewDefinitionError,
  type ViewIssue,
  ViewRunError,
} from './view-definition.ts'
