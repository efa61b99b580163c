import { fhirPathEngine, loadFhirPathEngine } from '../fhirpath/engine.ts'
import { constantLiterals, withConstants } from './constants.ts'
import { ElementsRead } from './elements-read.ts'
import { compileStep, compileValue, type Evaluate, type PathContext, PathError, type Step } from './paths.ts'
import { VIEW_METADATA_KEYS, VIEW_STATUSES, type ViewColumn, ViewDefinitionError, type ViewIssue } from './view-definition.ts'

/**
 * Validation and compilation of a ViewDefinition in one walk (SQL-ON-FHIR.md, "The engine"): every
 * problem is collected with its place (`select[1].column[0].path`) and reported together, and a
 * view with none comes out as a plan whose paths are compiled once each.
 */

/** A compiled select: its unnesting, its own columns, nested selects and unionAll branches. */
export interface SelectPlan {
  kind: 'plain' | 'forEach' | 'forEachOrNull' | 'repeat'
  /** forEach/forEachOrNull: one step; repeat: the steps from the parent, then from an element. */
  steps: Step[]
  repeatSteps: Step[]
  columns: ColumnPlan[]
  selects: SelectPlan[]
  unionAll: SelectPlan[]
  /** How many output columns this select gives (its own, nested, and one unionAll branch's). */
  width: number
}

export interface ColumnPlan {
  column: ViewColumn
  evaluate: Evaluate
}

export interface WherePlan {
  at: string
  evaluate: Evaluate
}

/** A valid, compiled view. */
export interface ViewPlan {
  resource: string
  columns: ViewColumn[]
  root: SelectPlan
  where: WherePlan[]
  /**
   * The resource's top-level elements the view reads (elements-read.ts), or undefined when it may
   * read any: a run over stored records need not parse the others.
   */
  elements?: string[]
}

/** Loads the FHIRPath engine (its model types unnested elements) and compiles the view. */
export async function prepareView(definition: unknown): Promise<ViewPlan> {
  await loadFhirPathEngine()
  return compileView(definition)
}

/** Compiles a view; throws ViewDefinitionError listing every problem. The engine must be loaded. */
export function compileView(definition: unknown): ViewPlan {
  const issues: ViewIssue[] = []
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
    throw new ViewDefinitionError([{ path: '', message: 'a ViewDefinition must be a JSON object' }])
  }
  const view = definition as Record<string, unknown>
  for (const key of Object.keys(view)) {
    if (!VIEW_METADATA_KEYS.has(key) && !['resource', 'constant', 'select', 'where'].includes(key)) {
      issues.push({ path: key, message: 'unknown key' })
    }
  }
  if (view.resourceType !== undefined && view.resourceType !== 'ViewDefinition') {
    issues.push({ path: 'resourceType', message: 'must be "ViewDefinition"' })
  }
  if (view.status !== undefined && !VIEW_STATUSES.has(view.status as string)) {
    issues.push({ path: 'status', message: `must be one of ${[...VIEW_STATUSES].join(', ')}` })
  }
  if (view.name !== undefined && typeof view.name !== 'string') issues.push({ path: 'name', message: 'must be a string' })
  const resource = view.resource
  const model = fhirPathEngine().r4 as unknown as { type2Parent: Record<string, string> }
  if (typeof resource !== 'string' || resource === '') {
    issues.push({ path: 'resource', message: 'required: the FHIR resource type the view reads (e.g. "Patient")' })
  } else if (!isResourceType(model.type2Parent, resource)) {
    issues.push({ path: 'resource', message: `${resource} is not an R4 resource type` })
  }
  const literals = constantLiterals(view.constant, issues)
  const resourceType = typeof resource === 'string' ? resource : 'Resource'
  const context: PathContext = { resource: resourceType }
  const compiler = new Compiler(literals, issues, new ElementsRead(resourceType))
  let root: SelectPlan | undefined
  if (!Array.isArray(view.select) || view.select.length === 0) {
    issues.push({ path: 'select', message: 'required: at least one select' })
  } else {
    root = compiler.selectList(view.select, 'select', context)
  }
  const where = compiler.whereList(view.where, context)
  const columns = root ? outputColumns(root) : []
  const seen = new Map<string, string>()
  for (const column of columns) {
    const first = seen.get(column.name)
    if (first) issues.push({ path: `${column.at}.name`, message: `duplicate column name ${column.name} (also ${first})` })
    else seen.set(column.name, column.at)
  }
  if (issues.length > 0 || !root) throw new ViewDefinitionError(issues)
  return { resource: resource as string, columns, root, where, elements: compiler.reads.elements() }
}

// --- Internal helpers ---

const SELECT_KEYS = new Set([
  'column',
  'select',
  'forEach',
  'forEachOrNull',
  'repeat',
  'unionAll',
  'extension',
  'modifierExtension',
  'id',
])
const COLUMN_KEYS = new Set(['name', 'path', 'type', 'collection', 'description', 'tag', 'extension', 'modifierExtension', 'id'])
const COLUMN_NAME = /^[A-Za-z][A-Za-z0-9_]*$/

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function isResourceType(type2Parent: Record<string, string>, name: string): boolean {
  for (let t: string | undefined = name; t; t = type2Parent[t]) if (t === 'Resource' && name !== 'Resource') return true
  return false
}

class Compiler {
  constructor(
    private readonly literals: Map<string, string>,
    private readonly issues: ViewIssue[],
    readonly reads: ElementsRead,
  ) {}

  /** Records a problem; answers undefined, for the compile that failed. */
  private issue(path: string, message: string): undefined {
    this.issues.push({ path, message })
    return undefined
  }

  /** A list of selects as one: their rows multiplied, as the view's top level and `select` do. */
  selectList(list: unknown[], at: string, context: PathContext): SelectPlan {
    const selects = list.map((s, i) => this.select(s, `${at}[${i}]`, context)).filter((s): s is SelectPlan => s !== undefined)
    return { kind: 'plain', steps: [], repeatSteps: [], columns: [], selects, unionAll: [], width: sum(selects) }
  }

  whereList(where: unknown, context: PathContext): WherePlan[] {
    if (where === undefined) return []
    if (!Array.isArray(where)) {
      this.issues.push({ path: 'where', message: 'must be an array of { path }' })
      return []
    }
    const plans: WherePlan[] = []
    where.forEach((w, i) => {
      const at = `where[${i}]`
      if (!isObject(w)) {
        this.issue(at, 'must be an object { path }')
        return
      }
      for (const key of Object.keys(w)) {
        if (!['path', 'description', 'extension'].includes(key))
          this.issues.push({ path: `${at}.${key}`, message: 'unknown key' })
      }
      const evaluate = this.value(w.path, `${at}.path`, context)
      if (evaluate) plans.push({ at: `${at}.path`, evaluate })
    })
    return plans
  }

  private select(raw: unknown, at: string, context: PathContext): SelectPlan | undefined {
    if (!isObject(raw)) return this.issue(at, 'must be an object')
    for (const key of Object.keys(raw))
      if (!SELECT_KEYS.has(key)) this.issues.push({ path: `${at}.${key}`, message: 'unknown key' })
    const unnesting = (['forEach', 'forEachOrNull', 'repeat'] as const).filter((k) => raw[k] !== undefined)
    if (unnesting.length > 1)
      this.issues.push({ path: at, message: `only one of forEach, forEachOrNull, repeat (has ${unnesting.join(', ')})` })
    const kind = unnesting[0] ?? 'plain'
    let steps: Step[] = []
    let repeatSteps: Step[] = []
    let inner = context
    if (kind === 'forEach' || kind === 'forEachOrNull') {
      const step = this.step(raw[kind], `${at}.${kind}`, context)
      if (step) {
        steps = [step]
        inner = step.context
      }
    } else if (kind === 'repeat') {
      ;({ steps, repeatSteps, inner } = this.repeat(raw.repeat, `${at}.repeat`, context))
    }
    const columns = this.columns(raw.column, `${at}.column`, inner)
    const selects = this.children(raw.select, `${at}.select`, inner)
    const unionAll = this.children(raw.unionAll, `${at}.unionAll`, inner)
    if (raw.unionAll !== undefined && unionAll.length === 0 && Array.isArray(raw.unionAll)) {
      this.issues.push({ path: `${at}.unionAll`, message: 'needs at least one select' })
    }
    this.checkUnion(unionAll, `${at}.unionAll`)
    const width = columns.length + sum(selects) + (unionAll[0]?.width ?? 0)
    return { kind, steps, repeatSteps, columns, selects, unionAll, width }
  }

  private children(list: unknown, at: string, context: PathContext): SelectPlan[] {
    if (list === undefined) return []
    if (!Array.isArray(list)) {
      this.issue(at, 'must be an array of selects')
      return []
    }
    return list.map((s, i) => this.select(s, `${at}[${i}]`, context)).filter((s): s is SelectPlan => s !== undefined)
  }

  /** unionAll branches must give the same columns, by name and in the same order. */
  private checkUnion(branches: SelectPlan[], at: string) {
    if (branches.length < 2) return
    const names = (s: SelectPlan) => outputColumns(s).map((c) => c.name)
    const first = names(branches[0]).join(', ')
    branches.slice(1).forEach((branch, i) => {
      const these = names(branch).join(', ')
      if (these !== first) {
        this.issues.push({
          path: `${at}[${i + 1}]`,
          message: `unionAll branches must have the same columns in the same order: (${these}) vs (${first})`,
        })
      }
    })
  }

  private columns(list: unknown, at: string, context: PathContext): ColumnPlan[] {
    if (list === undefined) return []
    if (!Array.isArray(list)) {
      this.issue(at, 'must be an array of columns')
      return []
    }
    const plans: ColumnPlan[] = []
    list.forEach((raw, i) => {
      const here = `${at}[${i}]`
      if (!isObject(raw)) {
        this.issue(here, 'must be an object { name, path }')
        return
      }
      for (const key of Object.keys(raw))
        if (!COLUMN_KEYS.has(key)) this.issues.push({ path: `${here}.${key}`, message: 'unknown key' })
      const { name, type, collection, description, tag } = raw
      if (typeof name !== 'string' || !COLUMN_NAME.test(name)) {
        this.issues.push({ path: `${here}.name`, message: 'required: letters, digits and _, starting with a letter' })
      }
      if (type !== undefined && (typeof type !== 'string' || type === ''))
        this.issues.push({ path: `${here}.type`, message: 'must be a FHIR type name' })
      if (collection !== undefined && typeof collection !== 'boolean')
        this.issues.push({ path: `${here}.collection`, message: 'must be a boolean' })
      if (description !== undefined && typeof description !== 'string')
        this.issues.push({ path: `${here}.description`, message: 'must be a string' })
      if (
        tag !== undefined &&
        !(Array.isArray(tag) && tag.every((t) => isObject(t) && typeof t.name === 'string' && typeof t.value === 'string'))
      ) {
        this.issues.push({ path: `${here}.tag`, message: 'must be an array of { name, value } strings' })
      }
      const evaluate = this.value(raw.path, `${here}.path`, context)
      // A column whose path is wrong still counts for the name checks; the view is refused anyway.
      if (typeof name === 'string') {
        const column: ViewColumn = { name, collection: collection === true, at: here }
        if (typeof type === 'string') column.type = type
        plans.push({ column, evaluate: evaluate ?? (() => []) })
      }
    })
    return plans
  }

  private repeat(paths: unknown, at: string, context: PathContext) {
    const none = { steps: [] as Step[], repeatSteps: [] as Step[], inner: {} as PathContext }
    if (!Array.isArray(paths) || paths.length === 0) {
      this.issues.push({ path: at, message: 'must be a non-empty array of FHIRPath strings' })
      return none
    }
    const compile = (from: PathContext, typed: boolean) => paths.map((p, i) => this.step(p, `${at}[${i}]`, from, typed))
    const steps = compile(context, true)
    if (!steps.every((s) => s !== undefined)) return none
    // Elements of one type (QuestionnaireResponse.item, through `item` and `answer.item`) are read
    // as plain JSON at every level; when the levels' types differ or are unknown, the engine
    // unnests them all, and its elements carry their types.
    const base = steps[0].context.base
    if (base && steps.every((s) => s.context.base === base)) {
      const repeatSteps = compile({ base }, true) as Step[]
      if (repeatSteps.every((s) => s.context.base === base)) return { steps, repeatSteps, inner: { base } }
    }
    return { steps: compile(context, false) as Step[], repeatSteps: compile({}, false) as Step[], inner: {} }
  }

  private step(path: unknown, at: string, context: PathContext, typed = true): Step | undefined {
    if (typeof path !== 'string' || path.trim() === '') return this.issue(at, 'must be a FHIRPath string')
    const before = this.issues.length
    const expression = withConstants(path, this.literals, at, this.issues)
    if (this.issues.length > before) return undefined
    try {
      const step = compileStep(expression, context, typed)
      this.reads.note(expression, context.resource !== undefined)
      return step
    } catch (err) {
      if (!(err instanceof PathError)) throw err
      this.issues.push({ path: at, message: err.message })
      return undefined
    }
  }

  private value(path: unknown, at: string, context: PathContext): Evaluate | undefined {
    if (typeof path !== 'string' || path.trim() === '') return this.issue(at, 'required: a FHIRPath string')
    const before = this.issues.length
    const expression = withConstants(path, this.literals, at, this.issues)
    if (this.issues.length > before) return undefined
    try {
      const evaluate = compileValue(expression, context)
      this.reads.note(expression, context.resource !== undefined)
      return evaluate
    } catch (err) {
      if (!(err instanceof PathError)) throw err
      this.issues.push({ path: at, message: err.message })
      return undefined
    }
  }
}

const sum = (selects: SelectPlan[]) => selects.reduce((n, s) => n + s.width, 0)

/** The columns a select gives, in output order: its own, its selects', then its unionAll's. */
export function outputColumns(select: SelectPlan): ViewColumn[] {
  return [
    ...select.columns.map((c) => c.column),
    ...select.selects.flatMap(outputColumns),
    ...(select.unionAll[0] ? outputColumns(select.unionAll[0]) : []),
  ]
}
