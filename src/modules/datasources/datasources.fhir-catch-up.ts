import { and, eq, isNotNull, isNull, sql } from 'drizzle-orm'
import type { FhirConfig } from '../../connectors/fhir.ts'
import { switchedOn, withLastUpdated } from '../../connectors/fhir-subscription-config.ts'
import type { ServiceContext } from '../../context.ts'
import { dataSources, fhirSourceSubscriptions } from '../../db/schema.ts'
import { isConflict } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { type SubscriptionRow, subscribedConfig, subscriptionOf } from './datasources.fhir-subscription.ts'
import type { DataSourceRow } from './datasources.schemas.ts'
import { executeSync } from './datasources.sync.ts'
import { beginSync } from './datasources.sync-lease.ts'

/**
 * The catch-up of a live `fhir` source (docs/connectors-fhir.md "Nothing lost"): what a gap, a
 * restart, an `error` status, a replaced or switched-on Subscription or a notification that met a
 * running sync owes is the source's own search since an instant, run as an incremental sync. The owed instant
 * lives in `fhir_source_subscriptions.catch_up_from`, the running one in `catch_up_running`.
 */

/**
 * How far before the instant it knows of a catch-up point is kept: a change the server stamped a
 * little earlier than one it sent before (transactions commit out of order), and the two clocks
 * apart (a catch-up's start is our clock), are still searched for. A change read twice is applied
 * twice, which moves nothing.
 */
export const CATCH_UP_MARGIN_MS = 60_000

/** Catch-ups run one after the other by one call, when more is owed by the end of one; then the tick. */
const CATCH_UP_ROUNDS = 3

/**
 * Catch-ups of the source while one is owed (at most `CATCH_UP_ROUNDS`): a notification that owes
 * one while another runs is caught up right after it, not at the next tick. Answers whether the
 * last ran and succeeded.
 */
export async function catchUp(ctx: ServiceContext, sourceId: number): Promise<boolean> {
  let ok = false
  for (let round = 0; round < CATCH_UP_ROUNDS; round++) {
    ok = await catchUpOnce(ctx, sourceId)
    if (!ok || !(await subscriptionOf(ctx, sourceId))?.catchUpFrom) break
  }
  return ok
}

/**
 * A catch-up of the source, if one is owed: an incremental sync run (trigger `subscription`) whose
 * read is the source's own search of each resource type with `_lastUpdated=gt<from>`; it adds and
 * updates, never deletes what it did not see. The owed instant is taken at the start into
 * `catch_up_running` (a gap found meanwhile owes another one) and given back when the run cannot
 * start or fails, or by the tick when the run died (`reclaimCatchUps`). Answers whether a catch-up
 * ran and succeeded.
 */
async function catchUpOnce(ctx: ServiceContext, sourceId: number): Promise<boolean> {
  const row = await subscriptionOf(ctx, sourceId)
  const from = row?.catchUpFrom
  if (!row || !from) return false
  const [source] = (await ctx.db.select().from(dataSources).where(eq(dataSources.id, sourceId))) as DataSourceRow[]
  const config = source && (await subscribedConfig(ctx, source))
  // A feed switched off keeps what it owes: the catch-up of the next switch on searches from there.
  if (!config || !switchedOn(config.subscription)) return false
  const started = isoNow(ctx.clock)
  const taken = await ctx.db
    .update(fhirSourceSubscriptions)
    .set({ catchUpFrom: null, catchUpRunning: from, catchUpTakenAt: started, updatedAt: started })
    .where(
      and(
        eq(fhirSourceSubscriptions.dataSourceId, sourceId),
        eq(fhirSourceSubscriptions.catchUpFrom, from),
        isNull(fhirSourceSubscriptions.catchUpRunning),
      ),
    )
    .returning({ id: fhirSourceSubscriptions.dataSourceId })
  if (taken.length === 0) return false
  ctx.log.info('fhir catch-up', { dataSourceId: sourceId, since: from })
  let ok = false
  try {
    const run = await beginSync(ctx, source, 'subscription')
    const outcome = await executeSync(ctx, source, run, (job) => ({
      ...job,
      config: withLastUpdated(job.config as FhirConfig, from),
      incremental: true,
    }))
    ok = outcome.source.syncStatus === 'success'
  } catch (err) {
    if (!isConflict(err)) throw err
  } finally {
    await (ok ? caughtUp(ctx, sourceId, started) : owe(ctx, sourceId, from, { catchUpRunning: null }))
  }
  return ok
}

/**
 * Gives back as owed the catch-ups whose run died (a crash, a stop): still marked running a minute
 * after they were taken (`catch_up_taken_at`, not `updated_at`, which every heartbeat moves),
 * while their source's lease is free. Answers how many.
 */
export async function reclaimCatchUps(db: ServiceContext['db'], now: Date): Promise<number> {
  const at = now.toISOString()
  const before = new Date(now.getTime() - 60_000).toISOString()
  const given = await db
    .update(fhirSourceSubscriptions)
    .set({
      catchUpFrom: sql`CASE WHEN catch_up_from IS NULL OR catch_up_from > catch_up_running THEN catch_up_running ELSE catch_up_from END`,
      catchUpRunning: null,
      catchUpTakenAt: null,
      updatedAt: at,
    } as never)
    .where(
      and(
        isNotNull(fhirSourceSubscriptions.catchUpRunning),
        // Taken before this migration's column existed: its last update is the best guess.
        sql`coalesce(${fhirSourceSubscriptions.catchUpTakenAt}, ${fhirSourceSubscriptions.updatedAt}) < ${before}`,
        sql`EXISTS (SELECT 1 FROM data_sources d WHERE d.id = ${fhirSourceSubscriptions.dataSourceId}
          AND (d.lease_run_id IS NULL OR d.lease_expires_at < ${at}))`,
      ),
    )
    .returning({ id: fhirSourceSubscriptions.dataSourceId })
  return given.length
}

/**
 * Runs a catch-up after the answer (kept alive by waitUntil on Workers); a failure stays owed and
 * the maintenance tick tries again.
 */
export function startCatchUp(ctx: ServiceContext, sourceId: number) {
  ctx.defer(catchUp(ctx, sourceId), { what: 'fhir catch-up', dataSourceId: sourceId })
}

/** Owes a catch-up from `from` (the earlier of it and one already owed); `also` sets more columns. */
export async function owe(ctx: ServiceContext, sourceId: number, from: string, also: Partial<SubscriptionRow>) {
  await ctx.db
    .update(fhirSourceSubscriptions)
    .set({
      ...also,
      catchUpFrom: sql`CASE WHEN catch_up_from IS NULL OR catch_up_from > ${from} THEN ${from} ELSE catch_up_from END`,
      updatedAt: isoNow(ctx.clock),
    } as never)
    .where(eq(fhirSourceSubscriptions.dataSourceId, sourceId))
}

// --- Internal helpers ---

/** A catch-up that began at `started` (our clock) succeeded: the point moves there, less the margin. */
async function caughtUp(ctx: ServiceContext, sourceId: number, started: string) {
  const to = new Date(Date.parse(started) - CATCH_UP_MARGIN_MS).toISOString()
  await ctx.db
    .update(fhirSourceSubscriptions)
    .set({ caughtUpAt: sql`max(caught_up_at, ${to})`, catchUpRunning: null, updatedAt: isoNow(ctx.clock) } as never)
    .where(eq(fhirSourceSubscriptions.dataSourceId, sourceId))
}
