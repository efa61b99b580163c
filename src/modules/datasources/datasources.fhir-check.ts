import { and, asc, eq, isNotNull, not, sql } from 'drizzle-orm'
import { FHIR_JSON } from '../../connectors/fhir.ts'
import { DEFAULT_HEARTBEAT_SECONDS, switchedOn } from '../../connectors/fhir-subscription-config.ts'
import { ConnectorError } from '../../connectors/types.ts'
import { type ServiceContext, systemContext } from '../../context.ts'
import { dataSources, fhirSourceSubscriptions } from '../../db/schema.ts'
import type { Deps } from '../../deps.ts'
import { isoNow } from '../../lib/clock.ts'
import { catchUp, reclaimCatchUps } from './datasources.fhir-catch-up.ts'
import type { FhirSubscriptionReport } from './datasources.fhir-report.ts'
import {
  createUpstream,
  removeSubscription,
  sameChannel,
  subscribedConfig,
  subscriptionOf,
} from './datasources.fhir-subscription.ts'
import { baseOf, fhirClient } from './datasources.fhir-upstream.ts'
import type { DataSourceRow } from './datasources.schemas.ts'

/** The subscription's source is in a panel not deleted (`d`), and `also` holds of it. */
const ofLivePanel = (also = sql`1`) => sql`EXISTS (SELECT 1 FROM data_sources d JOIN panels p ON p.id = d.panel_id
  WHERE d.id = ${fhirSourceSubscriptions.dataSourceId} AND p.deleted_at IS NULL AND ${also})`

const livePanel = ofLivePanel()

/**
 * The source's panel is live and its feed switched on (`config.subscription.enabled` absent or
 * true; JSON false reads as 0): a feed switched off is neither caught up nor checked nor made again.
 */
const liveFeed = ofLivePanel(sql`coalesce(json_extract(d.config, '$.subscription.enabled'), 1) <> 0`)

/**
 * The maintenance tick's step for live fhir sources (docs/connectors-fhir.md "Nothing lost"):
 * deletes the upstream Subscriptions of sources whose panel was deleted, gives back the catch-ups
 * whose run died, runs the catch-ups still owed, then reads the upstream Subscription of each
 * source that heard nothing (no notification, no check) for two heartbeat periods, or has none
 * yet; a dropped one is made again. Sources whose feed is switched off are left alone (their
 * scheduled syncs still run, in the tick's sync step). At most `limit` of each per step.
 */
export async function checkFhirSubscriptions(deps: Deps, now: Date, limit = 20): Promise<FhirSubscriptionReport> {
  const report: FhirSubscriptionReport = { caughtUp: 0, checked: 0, remade: 0, removed: 0 }
  // A deleted panel takes its sources' live rows with it: their Subscriptions go (the server stops
  // sending; the notification URL answers 401 once the state is dropped).
  const orphaned = await deps.db
    .select({ source: dataSources })
    .from(fhirSourceSubscriptions)
    .innerJoin(dataSources, eq(dataSources.id, fhirSourceSubscriptions.dataSourceId))
    .where(not(livePanel))
    .limit(limit)
  for (const { source } of orphaned) {
    if (deps.stopping?.aborted) return report
    await removeSubscription(systemContext(deps, source.tenantId), source as DataSourceRow)
    report.removed++
  }
  await reclaimCatchUps(deps.db, now)
  const owed = await deps.db
    .select({ id: fhirSourceSubscriptions.dataSourceId, tenantId: fhirSourceSubscriptions.tenantId })
    .from(fhirSourceSubscriptions)
    .where(and(isNotNull(fhirSourceSubscriptions.catchUpFrom), liveFeed))
    .orderBy(asc(fhirSourceSubscriptions.catchUpFrom))
    .limit(limit)
  for (const row of owed) {
    if (deps.stopping?.aborted) return report
    if (await catchUp(systemContext(deps, row.tenantId), row.id)) report.caughtUp++
  }
  const candidates = await deps.db
    .select({ sub: fhirSourceSubscriptions, source: dataSources })
    .from(fhirSourceSubscriptions)
    .innerJoin(dataSources, eq(dataSources.id, fhirSourceSubscriptions.dataSourceId))
    .where(liveFeed)
    .orderBy(asc(fhirSourceSubscriptions.checkedAt))
    .limit(limit * 5)
  let checks = 0
  for (const { sub, source } of candidates) {
    if (deps.stopping?.aborted || checks >= limit) break
    const heartbeat = (source.config as { subscription?: { heartbeatSeconds?: number } }).subscription?.heartbeatSeconds
    const quietSince = [sub.lastNotificationAt, sub.checkedAt]
      .filter((v): v is string => !!v)
      .sort()
      .at(-1)
    const due =
      sub.upstreamId === null ||
      !quietSince ||
      now.getTime() - new Date(quietSince).getTime() > 2 * 1000 * (heartbeat ?? DEFAULT_HEARTBEAT_SECONDS)
    if (!due) continue
    checks++
    report.checked++
    const ctx = systemContext(deps, source.tenantId)
    if (await checkUpstream(ctx, source as DataSourceRow)) {
      report.remade++
      if (await catchUp(ctx, source.id)) report.caughtUp++
    }
  }
  return report
}

/**
 * Reads the upstream Subscription (the heartbeat check): one the server no longer has (404, 410)
 * or reports `error` or `off` is re-made, and a catch-up is owed from the last instant applied.
 * One that cannot be read at all is left as it is (the server may be down), its error shown.
 * Answers whether it was re-made. The source is read again after its row (`source` may be older
 * than an update that raced the check): what is re-made is what the config asks for now.
 */
export async function checkUpstream(ctx: ServiceContext, { id: sourceId }: DataSourceRow): Promise<boolean> {
  const row = await subscriptionOf(ctx, sourceId)
  const [source] = (await ctx.db.select().from(dataSources).where(eq(dataSources.id, sourceId))) as DataSourceRow[]
  const config = source && (await subscribedConfig(ctx, source))
  // A feed switched off has nothing upstream to read, and is not made again.
  if (!config || !row || !switchedOn(config.subscription)) return false
  // One check at a time (instances, a tick and a receiver): the check claims the row by its last check.
  const claimed = await ctx.db
    .update(fhirSourceSubscriptions)
    .set({ checkedAt: isoNow(ctx.clock) })
    .where(and(sameChannel(row), sql`coalesce(checked_at, '') = ${row.checkedAt ?? ''}`))
    .returning({ id: fhirSourceSubscriptions.dataSourceId })
  if (claimed.length === 0) return false
  if (!row.upstreamId) return (await createUpstream(ctx, source, config, row)).claimed
  let status: string | undefined
  try {
    const client = fhirClient(ctx, source, config, (res) => (res.status === 404 || res.status === 410 ? GONE : undefined))
    const res = await client.send(`${baseOf(config)}/Subscription/${encodeURIComponent(row.upstreamId)}`, {
      method: 'GET',
      headers: { Accept: FHIR_JSON },
    })
    const read = JSON.parse(new TextDecoder().decode(await client.readBody(res))) as { status?: unknown }
    status = typeof read?.status === 'string' ? read.status : undefined
  } catch (err) {
    if (!(err instanceof ConnectorError && err.message === GONE)) {
      const message = err instanceof ConnectorError ? err.message : String(err)
      await ctx.db.update(fhirSourceSubscriptions).set({ error: message }).where(sameChannel(row))
      return false
    }
    status = 'gone'
  }
  if (status === 'gone' || status === 'error' || status === 'off') {
    ctx.log.warn('fhir subscription dropped by the server: made again', {
      dataSourceId: source.id,
      upstreamId: row.upstreamId,
      status,
    })
    const replaced = { ...row, catchUpFrom: row.catchUpFrom ?? row.caughtUpAt }
    // One the server no longer has needs no DELETE.
    return (await createUpstream(ctx, source, config, replaced, status === 'gone' ? null : undefined)).claimed
  }
  if (status && status !== row.status) {
    await ctx.db.update(fhirSourceSubscriptions).set({ status, error: null }).where(sameChannel(row))
  }
  return false
}

const GONE = 'gone'
