/**
 * The parts of a SQL-on-FHIR v2 ViewDefinition the engine reads (SQL-ON-FHIR.md, "The engine").
 * Everything arrives as untrusted JSON: validate.ts checks the shape before anything is compiled.
 */

export interface ViewDefinition {
  resourceType?: 'ViewDefinition'
  id?: string
  name?: string
  status?: string
  resource: string
  constant?: ViewConstant[]
  select: ViewSelect[]
  where?: { path: string; description?: string }[]
  [metadata: string]: unknown
}

/** `{ name, value[x] }`: exactly one `value…` key (constants.ts lists the types). */
export interface ViewConstant {
  name: string
  [valueX: string]: unknown
}

export interface ViewSelect {
  column?: ViewColumnDefinition[]
  select?: ViewSelect[]
  forEach?: string
  forEachOrNull?: string
  repeat?: string[]
  unionAll?: ViewSelect[]
}

export interface ViewColumnDefinition {
  name: string
  path: string
  type?: string
  collection?: boolean
  description?: string
  tag?: { name: string; value: string }[]
}

/** A column of the view's output, in output order. */
export interface ViewColumn {
  name: string
  /** The declared FHIR type (`string`, `integer`, …), when given. */
  type?: string
  collection: boolean
  /** Where it is declared (`select[1].column[0]`), for messages. */
  at: string
}

/** One problem with a view: where (`select[1].column[0].path`) and what. */
export interface ViewIssue {
  path: string
  message: string
}

/** The view is invalid: nothing was run. */
export class ViewDefinitionError extends Error {
  constructor(readonly issues: ViewIssue[]) {
    super(`Invalid ViewDefinition: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
    this.name = 'ViewDefinitionError'
  }
}

/**
 * A valid view met data it cannot turn into rows: a non-collection column with several values, a
 * `where` that is not boolean. The view is at fault (SQL-on-FHIR: such a view is an error), so the
 * caller answers it like an invalid view, naming the place and the resource.
 */
export class ViewRunError extends Error {
  constructor(
    readonly path: string,
    readonly resourceKey: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason} (${resourceKey})`)
    this.name = 'ViewRunError'
  }
}

/** Keys a ViewDefinition may carry besides the ones the engine reads: the resource's metadata. */
export const VIEW_METADATA_KEYS = new Set([
  'resourceType',
  'id',
  'meta',
  'implicitRules',
  'language',
  'text',
  'contained',
  'extension',
  'modifierExtension',
  'url',
  'identifier',
  'version',
  'name',
  'title',
  'status',
  'experimental',
  'date',
  'publisher',
  'contact',
  'description',
  'useContext',
  'jurisdiction',
  'purpose',
  'copyright',
  'fhirVersion',
  'profile',
])

export const VIEW_STATUSES = new Set(['draft', 'active', 'retired', 'unknown'])
