import { and, asc, eq, gt, gte, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { records } from '../../db/schema.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { requireDataSource } from '../datasources/datasources.service.ts'

/** Records read per query: enough to amortise a round trip, few enough to keep memory flat. */
const PAGE = 1000

/**
 * The current records of one of the caller's data sources (404 for another tenant's or user's), as
 * an async stream of their data read page by page, in key order through the
 * (data_source_id, generation, key) index, so a run over millions holds one page at a time.
 * `since`: only records written at or after that instant (their `updatedAt`).
 */
export async function sourceResources(ctx: ServiceContext, sourceId: number, since?: string): Promise<AsyncIterable<unknown>> {
  const source = await requireDataSource(ctx, sourceId)
  noteAccess(ctx, { dataSourceId: source.id, panelId: source.panelId })
  // A resource a panel's view stored as several rows (record_key) is read once, from its first row.
  const once = sql`(${records.recordKey} IS NULL OR NOT EXISTS (SELECT 1 FROM records o WHERE o.data_source_id = ${records.dataSourceId}
    AND o.generation = ${records.generation} AND o.record_key = ${records.recordKey} AND o.key < ${records.key}))`
  const base = and(eq(records.dataSourceId, source.id), eq(records.generation, source.currentGeneration), once)
  return {
    async *[Symbol.asyncIterator]() {
      let after: string | undefined
      for (;;) {
        const page = await ctx.db
          // The data as its stored text, parsed one record at a time as the run takes it: a page's
          // resources then die young instead of surviving into the old generation together.
          .select({ key: records.key, data: sql<string>`${records.data}` })
          .from(records)
          .where(
            and(
              base,
              after === undefined ? undefined : gt(records.key, after),
              since === undefined ? undefined : gte(records.updatedAt, since),
            ),
          )
          .orderBy(asc(records.key))
          .limit(PAGE)
        for (const record of page) yield JSON.parse(record.data) as unknown
        if (page.length < PAGE) return
        after = page[page.length - 1].key
      }
    },
  }
}

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
