import { and, eq, isNull, ne, sql } from 'drizzle-orm'
import { FHIR_JSON, FhirConfig } from '../../connectors/fhir.ts'
import {
  type SubscriptionConfig,
  subscriptionResource,
  subscriptionSpec,
  switchedOn,
} from '../../connectors/fhir-subscription-config.ts'
import { ConnectorError } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { dataSources, fhirSourceSubscriptions } from '../../db/schema.ts'
import { conflict, invalid } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { baseOf, deleteUpstream, fhirClient } from './datasources.fhir-upstream.ts'
import type { DataSourceRow } from './datasources.schemas.ts'
import { unsealConfig } from './datasources.secrets.ts'

/**
 * The upstream FHIR Subscription of a `fhir` source with `config.subscription` (docs/connectors-fhir.md
 * "Subscription mode"): made when the source is created or updated, replaced when what it was made
 * from changes, deleted with the source; re-made by the check when the server dropped it. Its
 * notifications arrive at `{PUBLIC_BASE_URL}/fhir-notify/{token}` (datasources.fhir-notify.ts).
 * `config.subscription.enabled: false` switches the live feed off: the upstream Subscription is
 * deleted, the state row stays (its token refused, its catch-up point kept) with status `off`, and
 * switching it on again makes a new Subscription that owes a catch-up from that point.
 */

export type SubscriptionRow = typeof fhirSourceSubscriptions.$inferSelect

/** What a source answers as `subscriptionStatus`. */
export interface SubscriptionStatusDto {
  id: string | null
  status: string
  eventsSinceStart: number
  lastNotificationAt: string | null
  error?: string
}

export const NOTIFY_PATH = '/fhir-notify'
/** The status of a source whose live feed is switched off (`config.subscription.enabled: false`). */
export const SWITCHED_OFF = 'off'
const PUBLIC_BASE_URL_MESSAGE =
  'A fhir source with config.subscription needs PUBLIC_BASE_URL: the address the FHIR server sends its notifications to'

/** A config with `subscription` needs PUBLIC_BASE_URL: 400 naming it when unset. */
export function requirePublicBaseUrl(ctx: ServiceContext, type: string, config: Record<string, unknown>) {
  if (type !== 'fhir' || config.subscription === undefined || ctx.config.publicBaseUrl) return
  throw invalid([{ path: 'config.subscription', message: PUBLIC_BASE_URL_MESSAGE }], PUBLIC_BASE_URL_MESSAGE)
}

/** The source's parsed config and subscription, when it is a fhir source in subscription mode. */
export async function subscribedConfig(
  ctx: ServiceContext,
  source: DataSourceRow,
): Promise<(FhirConfig & { subscription: SubscriptionConfig }) | undefined> {
  if ((source.config as { subscription?: unknown }).subscription === undefined) return undefined
  const config = await fhirConfigOf(ctx, source)
  return config?.subscription ? (config as FhirConfig & { subscription: SubscriptionConfig }) : undefined
}

/** The source's parsed fhir config (secrets unsealed); undefined for another type or a config that does not parse. */
async function fhirConfigOf(ctx: ServiceContext, source: DataSourceRow): Promise<FhirConfig | undefined> {
  if (source.type !== 'fhir') return undefined
  const parsed = FhirConfig.safeParse(await unsealConfig(ctx.secrets, source.config))
  return parsed.success ? parsed.data : undefined
}

/** The subscription state row of a source, if it has one. */
export async function subscriptionOf(ctx: ServiceContext, sourceId: number): Promise<SubscriptionRow | undefined> {
  const [row] = await ctx.db.select().from(fhirSourceSubscriptions).where(eq(fhirSourceSubscriptions.dataSourceId, sourceId))
  return row
}

/** `subscriptionStatus` of a source in subscription mode; undefined for any other source. */
export async function subscriptionStatusOf(
  ctx: ServiceContext,
  source: DataSourceRow,
): Promise<SubscriptionStatusDto | undefined> {
  const subscription = (source.config as { subscription?: { enabled?: unknown } }).subscription
  if (source.type !== 'fhir' || subscription === undefined) return undefined
  const row = await subscriptionOf(ctx, source.id)
  if (!row) return { id: null, status: SWITCHED_OFF, eventsSinceStart: 0, lastNotificationAt: null }
  // Switched off: whatever a notification that raced the switch may have written, there is none upstream.
  if (!switchedOn(subscription)) {
    return { id: null, status: SWITCHED_OFF, eventsSinceStart: row.eventsSinceStart, lastNotificationAt: row.lastNotificationAt }
  }
  return {
    id: row.upstreamId,
    status: row.status,
    eventsSinceStart: row.eventsSinceStart,
    lastNotificationAt: row.lastNotificationAt,
    ...(row.error ? { error: row.error } : {}),
  }
}

/**
 * Brings the upstream Subscription in line with the source's config after a create or update: made
 * when missing (or its creation failed before, or the feed was switched off), replaced when its
 * spec changed (the old one deleted, a catch-up owed for the moments between), deleted when the
 * feed is switched off (`switchOff`), removed with its state when the config has no subscription
 * any more. A Subscription already as the config wants it, or being made so by another writer, is
 * left alone. An unreachable FHIR server is not the caller's fault: the failure is kept on the
 * subscription (`status: error`, `error`), and the maintenance tick tries again. Answers whether a
 * new Subscription was made that owes a catch-up (the caller may start it at once).
 *
 * Writers race (instances, the tick's check): each change of the state row is a compare-and-set on
 * the channel it read (`sameChannel`), and only the winner touches the server (docs/connectors-fhir.md
 * "Concurrent writers"). A loser reads again; after its own write it reads again too, until the row
 * is as the source's config is now.
 */
export async function reconcileSubscription(ctx: ServiceContext, sourceId: number, before?: DataSourceRow): Promise<boolean> {
  let owed = false
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    // The row first, then the source: a claim that wins on the row as read carries a config at
    // least as new as the writes that made that row.
    const row = await subscriptionOf(ctx, sourceId)
    const [found] = await ctx.db.select().from(dataSources).where(eq(dataSources.id, sourceId))
    if (!found) return owed
    const source = found as DataSourceRow
    const config = await subscribedConfig(ctx, source)
    if (!config) {
      if (row) await removeSubscription(ctx, before ?? source)
      return false
    }
    const made = row && (await madeOn(ctx, row, source, config, before))
    if (!switchedOn(config.subscription)) {
      if (await switchOff(ctx, source, config, row, made)) return false
      continue
    }
    const spec = subscriptionSpec(config.baseUrl, config.subscription)
    if (row && row.spec === spec && (row.upstreamId !== null || beingMade(row))) return owed
    const outcome = await createUpstream(ctx, source, config, row, made)
    if (!outcome.claimed) continue
    // Superseded by a later writer (who owes what is owed), or not made (the tick tries again).
    if (!outcome.row?.upstreamId) return outcome.row ? outcome.row.catchUpFrom !== null : false
    owed = outcome.row.catchUpFrom !== null
  }
  ctx.log.warn('fhir subscription: writers kept racing, left to the last one', { dataSourceId: sourceId })
  return owed
}

const CLAIM_ATTEMPTS = 5

/** The row is the channel of a Subscription another writer is posting (no id yet, no error, not off). */
const beingMade = (row: SubscriptionRow) => row.upstreamId === null && row.error === null && row.status !== SWITCHED_OFF

/** The row's channel is still the one read: same token, same upstream Subscription (the compare of every claim). */
export const sameChannel = (row: SubscriptionRow) =>
  and(
    eq(fhirSourceSubscriptions.dataSourceId, row.dataSourceId),
    eq(fhirSourceSubscriptions.tokenHash, row.tokenHash),
    sql`coalesce(${fhirSourceSubscriptions.upstreamId}, '') = ${row.upstreamId ?? ''}`,
  )

/** An upstream Subscription to delete, with the source and config of the server it was made on. */
interface Made {
  source: DataSourceRow
  config: FhirConfig
}

/**
 * Where the row's Subscription was made, with which credentials: the source as it was before an
 * update (its base URL or authentication may have changed), unless the row was made on the new
 * base URL (by a writer that raced this update).
 */
async function madeOn(
  ctx: ServiceContext,
  row: SubscriptionRow,
  source: DataSourceRow,
  config: FhirConfig,
  before?: DataSourceRow,
): Promise<Made> {
  const previous = before && (await fhirConfigOf(ctx, before))
  if (!before || !previous) return { source, config }
  const base = (JSON.parse(row.spec) as unknown[])[0]
  return base === baseOf(config) && base !== baseOf(previous) ? { source, config } : { source: before, config: previous }
}

/**
 * The live feed switched off: the upstream Subscription is deleted (best effort, as on source
 * delete) and the state row stays with status `off` and no upstream id, keeping its token (which
 * the receiver now refuses) and its catch-up point (`caughtUpAt`, `catchUpFrom`), from which the
 * catch-up of the next switch on searches. A source created switched off gets its row now, its
 * catch-up point before the initial sync. A feed already off is left as it is. Answers false when
 * another writer changed the row first (nothing done: read it again).
 */
async function switchOff(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig & { subscription: SubscriptionConfig },
  row: SubscriptionRow | undefined,
  made: Made | undefined,
): Promise<boolean> {
  const now = isoNow(ctx.clock)
  if (!row) {
    const { values } = await freshChannel(ctx, source, config)
    const inserted = await ctx.db
      .insert(fhirSourceSubscriptions)
      .values({ dataSourceId: source.id, ...values, status: SWITCHED_OFF, createdAt: now })
      .onConflictDoNothing()
      .returning({ id: fhirSourceSubscriptions.dataSourceId })
    return inserted.length > 0
  }
  if (row.upstreamId === null && row.status === SWITCHED_OFF && row.error === null) return true
  const claimed = await ctx.db
    .update(fhirSourceSubscriptions)
    .set({ upstreamId: null, status: SWITCHED_OFF, error: null, updatedAt: now })
    .where(sameChannel(row))
    .returning({ id: fhirSourceSubscriptions.dataSourceId })
  if (claimed.length === 0) return false
  if (row.upstreamId && made) await deleteUpstream(ctx, made.source, row.upstreamId, made.config)
  return true
}

/** The 409 of a notification to a source whose live feed is switched off: nothing changes. */
export const switchedOffConflict = () =>
  conflict(
    'The live feed of this data source is switched off (config.subscription.enabled is false): its notifications are refused until it is switched on',
  )

/**
 * Deletes the state row and the upstream Subscription it names (best effort: a server that cannot
 * be reached is logged, the source goes anyway). Called before the source itself is deleted. The
 * row goes first, on the channel read: a writer still posting then finds it gone and deletes what
 * it made.
 */
export async function removeSubscription(ctx: ServiceContext, source: DataSourceRow): Promise<void> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const row = await subscriptionOf(ctx, source.id)
    if (!row) return
    const removed = await ctx.db
      .delete(fhirSourceSubscriptions)
      .where(sameChannel(row))
      .returning({ id: fhirSourceSubscriptions.dataSourceId })
    if (removed.length === 0) continue
    const config = row.upstreamId ? await fhirConfigOf(ctx, source) : undefined
    if (row.upstreamId && config) await deleteUpstream(ctx, source, row.upstreamId, config)
    return
  }
  ctx.log.warn('fhir subscription: writers kept racing, state not removed', { dataSourceId: source.id })
}

/**
 * Makes a new upstream Subscription: a fresh token and channel secret (256 random bits each),
 * stored encrypted before the POST so the handshake that may follow at once finds them; the
 * counters start again (a new Subscription numbers its events from 1). `previous`: the state row
 * of a Subscription this one replaces (its catch-up point is kept, and a catch-up is owed);
 * `made`: where to delete the Subscription it names (null: nowhere, the server has dropped it).
 *
 * Two conditional writes keep one Subscription per source whatever the interleaving: the claim
 * replaces the row only while its channel is still `previous` (or inserts it while there is none),
 * so a writer that lost posts nothing (`claimed: false`); the record of the id holds only while
 * the row is still this writer's channel, so a writer superseded while posting deletes the
 * Subscription it made (`row` undefined). The claim's winner alone deletes the one it replaces.
 */
export async function createUpstream(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig & { subscription: SubscriptionConfig },
  previous?: SubscriptionRow,
  made: Made | null = { source, config },
): Promise<{ claimed: boolean; row?: SubscriptionRow }> {
  const now = isoNow(ctx.clock)
  const { token, secret, values } = await freshChannel(ctx, source, config, previous)
  const claimed = previous
    ? await ctx.db
        .update(fhirSourceSubscriptions)
        .set(values)
        .where(sameChannel(previous))
        .returning({ id: fhirSourceSubscriptions.dataSourceId })
    : await ctx.db
        .insert(fhirSourceSubscriptions)
        .values({ dataSourceId: source.id, ...values, createdAt: now })
        .onConflictDoNothing()
        .returning({ id: fhirSourceSubscriptions.dataSourceId })
        // The source was deleted meanwhile (its foreign key refuses the row): nothing to make.
        .catch(async (err) => ((await sourceGone(ctx, source.id)) ? [] : Promise.reject(err)))
  if (claimed.length === 0) return { claimed: false }
  // Deleted meanwhile where foreign keys are not enforced: the row claimed goes, nothing is made.
  // (A deletion after this point meets the row: datasources.service.ts removes it first.)
  if (await sourceGone(ctx, source.id)) {
    await ctx.db.delete(fhirSourceSubscriptions).where(eq(fhirSourceSubscriptions.tokenHash, values.tokenHash))
    return { claimed: false }
  }
  if (previous?.upstreamId && made) await deleteUpstream(ctx, made.source, previous.upstreamId, made.config)
  const endpoint = `${ctx.config.publicBaseUrl}${NOTIFY_PATH}/${token}`
  const body = subscriptionResource(config.subscription, endpoint, secret, `Panel data source ${source.id} (live rows)`)
  let update: Partial<SubscriptionRow>
  try {
    const client = fhirClient(ctx, source, config)
    const res = await client.send(`${baseOf(config)}/Subscription`, {
      method: 'POST',
      headers: { 'Content-Type': FHIR_JSON, Accept: FHIR_JSON },
      body: JSON.stringify(body),
    })
    const created = JSON.parse(new TextDecoder().decode(await client.readBody(res))) as { id?: unknown; status?: unknown }
    if (typeof created?.id !== 'string' || created.id === '') {
      throw new ConnectorError('The FHIR server answered the Subscription without an id')
    }
    update = { upstreamId: created.id, status: typeof created.status === 'string' ? created.status : 'requested', error: null }
  } catch (err) {
    const message = err instanceof ConnectorError ? err.message : `The Subscription could not be created: ${String(err)}`
    ctx.log.warn('fhir subscription not created', { dataSourceId: source.id, error: message })
    update = { status: 'error', error: message }
  }
  // The handshake may already have set the status: it is kept unless this answer says more.
  const [stored] = await ctx.db
    .update(fhirSourceSubscriptions)
    .set({
      ...update,
      status: update.status === 'requested' ? sql`CASE WHEN status = 'active' THEN status ELSE 'requested' END` : update.status,
    } as never)
    .where(
      and(
        eq(fhirSourceSubscriptions.dataSourceId, source.id),
        eq(fhirSourceSubscriptions.tokenHash, values.tokenHash),
        isNull(fhirSourceSubscriptions.upstreamId),
        ne(fhirSourceSubscriptions.status, SWITCHED_OFF),
      ),
    )
    .returning()
  if (!stored && update.upstreamId) {
    ctx.log.warn('fhir subscription superseded while made: deleted', { dataSourceId: source.id, upstreamId: update.upstreamId })
    await deleteUpstream(ctx, source, update.upstreamId, config)
  }
  return { claimed: true, row: stored as SubscriptionRow | undefined }
}

/**
 * The state of a new channel: a fresh token and channel secret (256 random bits each, stored
 * encrypted), counters from zero; the catch-up point of `previous` kept, and a catch-up owed from
 * it (a replaced or switched-off Subscription may have missed changes while none was registered).
 */
async function freshChannel(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig & { subscription: SubscriptionConfig },
  previous?: SubscriptionRow,
) {
  const token = randomToken()
  const secret = randomToken()
  const now = isoNow(ctx.clock)
  const values = {
    tenantId: source.tenantId,
    tokenHash: await sha256Hex(token),
    token: await ctx.secrets.encrypt(token),
    secret: await ctx.secrets.encrypt(secret),
    spec: subscriptionSpec(config.baseUrl, config.subscription),
    upstreamId: null,
    status: 'requested',
    error: null,
    eventsSinceStart: 0,
    lastNotificationAt: null,
    caughtUpAt: previous?.caughtUpAt ?? now,
    catchUpFrom: previous ? (previous.catchUpFrom ?? previous.caughtUpAt) : null,
    lastClaim: null,
    checkedAt: now,
    updatedAt: now,
  }
  return { token, secret, values }
}

/** Random URL-safe text of 256 bits. */
function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
}

/** Hex SHA-256 of a text (WebCrypto, on every runtime). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}

const sourceGone = async (ctx: ServiceContext, id: number) =>
  (await ctx.db.select({ id: dataSources.id }).from(dataSources).where(eq(dataSources.id, id))).length === 0
