import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { requireDataSource } from '../datasources/datasources.service.ts'

/** Records read per query: enough to amortise a round trip, few enough to keep memory flat. */
const PAGE = 1000

/**
 * The current records of one of the caller's data sources (404 for another tenant's or user's), as
 * an async stream of their data read page by page, in key order through the
 * (data_source_id, generation, key) indexes, so a run over millions holds one page at a time. The
 * resources a panel's view stored as rows, and those it gave none and so holds (rowstore/held.ts),
 * are all read, each once. `since`: only records written at or after that instant (their
 * `updatedAt`). `elements`: the top-level elements the view reads (ViewPlan.elements); the others
 * are left in the database.
 */
export async function sourceResources(
  ctx: ServiceContext,
  sourceId: number,
  since?: string,
  elements?: string[],
): Promise<AsyncIterable<unknown>> {
  const source = await requireDataSource(ctx, sourceId)
  noteAccess(ctx, { dataSourceId: source.id, panelId: source.panelId })
  const records = sourceRecords(ctx, { id: source.id, generation: source.currentGeneration }, { since, elements })
  return {
    async *[Symbol.asyncIterator]() {
      for await (const record of records) yield record.resource
    },
  }
}

/** Which records of a source to read: a generation of it, from after a key, changed since an instant. */
export interface SourceSlice {
  since?: string
  elements?: string[]
  /** Only records whose key sorts after this one (a reader resuming where it stopped). */
  after?: string
}

/**
 * The records of `source`'s `generation` with their keys, in key order, page by page (the reader of
 * sourceResources, which an export resumes by key across runs). The caller has checked the access.
 */
export async function* sourceRecords(
  ctx: Pick<ServiceContext, 'db'>,
  source: { id: number; generation: number },
  slice: SourceSlice = {},
): AsyncGenerator<{ key: string; resource: unknown }> {
  const read = (table: string) => {
    const data = sql.raw(`${table}.data`)
    return slice.elements ? projection(slice.elements, data) : { data, id: sql`NULL` }
  }
  const rows = read('r')
  const held = read('h')
  let after = slice.after
  for (;;) {
    const where = (table: string) =>
      sql`${recordsOf(table, source, slice.since)} ${after === undefined ? sql`` : sql`AND ${sql.raw(`${table}.key`)} > ${after}`}`
    // A resource a view stored as several rows (record_key) is read once, from its first row.
    // A compound SELECT ordered by key: SQLite merges the two index-ordered halves, page by page.
    const page = await ctx.db.all<{ key: string; data: string; id: string | null }>(sql`
      SELECT r.key AS key, ${rows.data} AS data, ${rows.id} AS id FROM records r
      WHERE ${where('r')} AND ${FIRST_OF_RECORD}
      UNION ALL
      SELECT h.key AS key, ${held.data} AS data, ${held.id} AS id FROM held_records h WHERE ${where('h')}
      ORDER BY key LIMIT ${PAGE}`)
    for (const record of page) {
      // The data as its stored text, parsed one record at a time as the run takes it: a page's
      // resources then die young instead of surviving into the old generation together.
      const resource = JSON.parse(record.data)
      if (record.id !== null) resource.id = record.id
      yield { key: record.key, resource: resource as unknown }
    }
    if (page.length < PAGE) return
    after = page[page.length - 1].key
  }
}

/** How many resources sourceRecords reads of `source`'s generation (changed since `since`, when given). */
export async function countSourceRecords(
  ctx: Pick<ServiceContext, 'db'>,
  source: { id: number; generation: number },
  since?: string,
): Promise<number> {
  const [row] = await ctx.db.all<{ total: number }>(sql`
    SELECT (SELECT count(*) FROM records r WHERE ${recordsOf('r', source, since)} AND ${FIRST_OF_RECORD})
      + (SELECT count(*) FROM held_records h WHERE ${recordsOf('h', source, since)}) AS total`)
  return Number(row?.total ?? 0)
}

/**
 * The record's data reduced to `elements` (plain identifiers, ViewPlan.elements), as JSON text
 * built by SQLite, each element's text exactly as stored; and a string `id` apart from it. V8's
 * JSON.parse interns every string value of up to 10 characters (measured; docs/sql-on-fhir.md):
 * a resource's own id is unique, so parsing ids made each run pile up interned strings that only a
 * major collection frees, and peak memory grew with the run's length. Read as a column, the id is
 * an ordinary string that dies young. Any other type of `id` stays in the JSON, as stored.
 */
function projection(elements: string[], data: SQL): { data: SQL<string>; id: SQL<string | null> } {
  const unsafe = elements.find((name) => !SAFE_NAME.test(name))
  if (unsafe !== undefined) throw new Error(`not an element name: ${unsafe}`)
  const parts = elements.map((name) =>
    name === 'id'
      ? sql`CASE WHEN json_type(${data}, '$.id') <> 'text' THEN '"id":' || (${data} -> '$.id') END`
      : sql`${sql.raw(`'"${name}":'`)} || (${data} -> ${sql.raw(`'$.${name}'`)})`,
  )
  return {
    data: sql<string>`'{' || concat_ws(',', ${sql.join(parts, sql`, `)}) || '}'`,
    id: sql<string | null>`CASE WHEN json_type(${data}, '$.id') = 'text' THEN ${data} ->> '$.id' END`,
  }
}

/** In SQL, on `table` (records or held_records as `r`/`h`): the source's generation, changed since `since`. */
function recordsOf(table: string, source: { id: number; generation: number }, since?: string): SQL {
  const column = (name: string) => sql.raw(`${table}.${name}`)
  return sql`${column('data_source_id')} = ${source.id} AND ${column('generation')} = ${source.generation}
    ${since === undefined ? sql`` : sql`AND ${column('updated_at')} >= ${since}`}`
}

/** In SQL, on `records r`: the first row of its resource (a resource a view stored as several rows). */
const FIRST_OF_RECORD = sql`(r.record_key IS NULL OR NOT EXISTS (SELECT 1 FROM records o
  WHERE o.data_source_id = r.data_source_id AND o.generation = r.generation AND o.record_key = r.record_key AND o.key < r.key))`

/** Element names are written into the SQL text (D1 allows 100 bound values a statement). */
const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Whether a resource belongs to the patient `Patient/<id>`: the Patient itself, or a resource whose
 * `subject` or `patient` references it (any base URL, any version).
 */
export function ofPatient(resource: unknown, patientKey: string): boolean {
  const r = resource as {
    resourceType?: unknown
    id?: unknown
    subject?: { reference?: unknown }
    patient?: { reference?: unknown }
  }
  if (r.resourceType === 'Patient') return `Patient/${String(r.id)}` === patientKey
  return [r.subject?.reference, r.patient?.reference].some((ref) => typeof ref === 'string' && referenceKey(ref) === patientKey)
}

const referenceKey = (reference: string) => reference.replace(/\/_history\/[^/]+$/, '').match(/([A-Z][A-Za-z]+\/[^/]+)$/)?.[1]
