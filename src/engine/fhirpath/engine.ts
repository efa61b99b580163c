/**
 * The FHIRPath engine: the `fhirpath` package with its R4 model, imported here only, on first need.
 * Loaded, it adds ~20 MB to a process (~9 MB of live heap, which also makes V8 grow the heap
 * further) that a sync of plain CSV rows through member paths never uses. So it is a memoised
 * dynamic import: each async step that is about to compile or evaluate FHIRPath (loading a panel's
 * plan, a batch of records to materialise, a column or formula to check) awaits
 * loadFhirPathEngineFor() first, and the synchronous per-row code reads it with fhirPathEngine().
 * The Node builds put it in a chunk of its own (scripts/build.ts): until then its code is not read.
 */
import type fhirpath from 'fhirpath'
import type { Model } from 'fhirpath'
import { isMemberPath, readsWithoutEngine } from './member-path.ts'

export interface FhirPathEngine {
  fhirpath: typeof fhirpath
  r4: Model
}

/**
 * Synchronous code reached the engine before it was loaded: an async step missed
 * loadFhirPathEngineFor(). A bug, never an answer: the code that turns errors into cell errors
 * rethrows it, so it fails the request or the sync instead of changing a result.
 */
export class FhirPathEngineNotLoaded extends Error {
  constructor() {
    super('Internal error: the FHIRPath engine was used before it was loaded (a missing loadFhirPathEngineFor())')
    this.name = 'FhirPathEngineNotLoaded'
  }
}

let engine: FhirPathEngine | undefined
let loading: Promise<FhirPathEngine> | undefined

/** Loads the engine once; concurrent and later calls share that load (a failed one is tried again). */
export function loadFhirPathEngine(): Promise<FhirPathEngine> {
  loading ??= Promise.all([import('fhirpath'), import('fhirpath/fhir-context/r4')]).then(
    ([lib, model]) => {
      engine = { fhirpath: lib.default, r4: model.default }
      return engine
    },
    (err: unknown) => {
      loading = undefined
      throw err
    },
  )
  return loading
}

/** The loaded engine, for synchronous code; FhirPathEngineNotLoaded before loadFhirPathEngine() resolved. */
export function fhirPathEngine(): FhirPathEngine {
  if (!engine) throw new FhirPathEngineNotLoaded()
  return engine
}

/** Whether the engine is loaded (tests check that plain syncs leave it unloaded). */
export const fhirPathEngineLoaded = (): boolean => engine !== undefined

/**
 * Whether evaluating `expressions` over `records` may reach the engine. Any expression but a
 * member path compiles with the engine (`null` stands for one known only at run time, as in
 * `FHIRPATH({Expr})`); a member path needs it only as the fallback for a record the navigator
 * cannot read exactly, which is a FHIR resource (`Observation.value` is `valueQuantity`).
 */
export function needsFhirPathEngine(expressions: Iterable<string | null>, records: Iterable<unknown> = []): boolean {
  let reads = false
  for (const expression of expressions) {
    if (expression === null || !isMemberPath(expression)) return true
    reads = true
  }
  if (!reads) return false
  for (const record of records) if (!readsWithoutEngine(record)) return true
  return false
}

/** Loads the engine when needsFhirPathEngine() says so; await it before compiling or evaluating. */
export async function loadFhirPathEngineFor(expressions: Iterable<string | null>, records?: Iterable<unknown>): Promise<void> {
  if (!engine && needsFhirPathEngine(expressions, records)) await loadFhirPathEngine()
}
