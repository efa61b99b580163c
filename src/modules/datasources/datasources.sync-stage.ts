import { and, asc, eq, gte, type SQL, sql } from 'drizzle-orm'
import type { SourceRecord } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { syncStagedRecords } from '../../db/schema.ts'

/**
 * The staging of an incremental read that applies at its end (Connector.appliesAtEnd: a bulk
 * export since its last transactionTime). Its batches are kept apart in `sync_staged_records`, in
 * read order, while the read goes on (across invocations too); once it has read to its end they
 * are read back a page at a time and applied through the run's normal incremental write, so a
 * failure while reading applies nothing. The run's end drops what it staged.
 */

/** Records read back per applied batch. */
export const STAGED_PAGE = 500

/** The statement that stages `batch` of `runId` from position `seq` on. */
export function stageStatement(runId: number, seq: number, batch: readonly SourceRecord[]): SQL {
  const payload = JSON.stringify(batch.map((r) => ({ k: r.key ?? null, d: r.data, x: r.deleted ? 1 : 0 })))
  return sql`INSERT INTO sync_staged_records (run_id, seq, key, data, deleted)
    SELECT ${runId}, ${seq} + CAST(j.key AS INTEGER), json_extract(j.value, '$.k'), json_extract(j.value, '$.d'),
      json_extract(j.value, '$.x')
    FROM json_each(${payload}) j`
}

/** Where the next staged record of `runId` goes: after what an earlier invocation of the run staged. */
export async function nextStagedSeq(ctx: ServiceContext, runId: number): Promise<number> {
  const [row] = await ctx.db
    .select({ next: sql<number>`coalesce(max(${syncStagedRecords.seq}) + 1, 0)` })
    .from(syncStagedRecords)
    .where(eq(syncStagedRecords.runId, runId))
  return Number(row?.next ?? 0)
}

/** The staged records of `runId` from `seq` on, at most `limit`, in read order. */
export async function readStaged(
  ctx: ServiceContext,
  runId: number,
  seq: number,
  limit: number,
): Promise<{ seq: number; record: SourceRecord }[]> {
  const rows = await ctx.db
    .select()
    .from(syncStagedRecords)
    .where(and(eq(syncStagedRecords.runId, runId), gte(syncStagedRecords.seq, seq)))
    .orderBy(asc(syncStagedRecords.seq))
    .limit(limit)
  return rows.map((r) => ({
    seq: r.seq,
    record: { ...(r.key === null ? {} : { key: r.key }), data: r.data, ...(r.deleted ? { deleted: true } : {}) },
  }))
}

/** What a run staged, dropped (its end, whatever it was). */
export const dropStaged = (ctx: ServiceContext, runId: number) =>
  ctx.db.delete(syncStagedRecords).where(eq(syncStagedRecords.runId, runId))
