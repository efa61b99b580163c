import { and, eq, sql } from 'drizzle-orm'
import type { FhirConfig } from '../../connectors/fhir.ts'
import { type SubscriptionConfig, switchedOn } from '../../connectors/fhir-subscription-config.ts'
import type { ServiceContext } from '../../context.ts'
import { systemContext } from '../../context.ts'
import { dataSources, fhirSourceSubscriptions } from '../../db/schema.ts'
import type { Deps } from '../../deps.ts'
import { unauthorized } from '../../errors.ts'
import { type SubscriptionRow, sha256Hex, subscribedConfig, switchedOffConflict } from './datasources.fhir-subscription.ts'
import type { DataSourceRow } from './datasources.schemas.ts'

/**
 * Who sent a notification to `/fhir-notify/{token}` (datasources.fhir-notify.ts): checked before its
 * body is read, by the token and the channel header, each compared in constant time.
 */

/** The 401 of a wrong or missing token or channel header: the same answer for each, nothing changes. */
export const refused = () => unauthorized('UNAUTHORIZED', 'The notification token or its Authorization header is not valid')

/** A sender that proved its token and header: the source it notifies, its state and its config. */
export type Verified = {
  ctx: ServiceContext
  row: SubscriptionRow
  source: DataSourceRow
  config: FhirConfig & { subscription: SubscriptionConfig }
}

/**
 * The sender of a notification, checked before its body is read: the source of a token, after checking the token (found by its hash, then compared whole in
 * constant time) and the channel header (compared in constant time). Any failure is the same 401.
 * A source whose live feed is switched off answers 409 (after both checks) and nothing changes.
 */
export async function verifySender(deps: Deps, token: string, authorization: string | undefined): Promise<Verified> {
  if (!/^[A-Za-z0-9_-]{20,200}$/.test(token)) throw refused()
  const hash = await sha256Hex(token)
  const [row] = await deps.db
    .select()
    .from(fhirSourceSubscriptions)
    .where(
      and(
        eq(fhirSourceSubscriptions.tokenHash, hash),
        sql`EXISTS (SELECT 1 FROM data_sources d JOIN panels p ON p.id = d.panel_id
          WHERE d.id = ${fhirSourceSubscriptions.dataSourceId} AND p.deleted_at IS NULL)`,
      ),
    )
    .limit(1)
  if (!row) throw refused()
  const ctx = systemContext(deps, row.tenantId)
  const [storedToken, secret] = await Promise.all([ctx.secrets.decrypt(row.token), ctx.secrets.decrypt(row.secret)])
  const tokenOk = await sameText(token, storedToken)
  const headerOk = await sameText(authorization ?? '', `Bearer ${secret}`)
  if (!tokenOk || !headerOk) throw refused()
  const [source] = (await ctx.db.select().from(dataSources).where(eq(dataSources.id, row.dataSourceId))) as DataSourceRow[]
  const config = source && (await subscribedConfig(ctx, source))
  if (!config) throw refused()
  // Only a sender that proved the token and header learns that the feed is switched off.
  if (!switchedOn(config.subscription)) throw switchedOffConflict()
  return { ctx, row, source, config }
}

// --- Internal helpers ---

/** Equality of two texts in constant time: their SHA-256 digests compared byte by byte, all of them. */
async function sameText(a: string, b: string): Promise<boolean> {
  const enc = new TextEncoder()
  const [x, y] = await Promise.all([
    crypto.subtle.digest('SHA-256', enc.encode(a)),
    crypto.subtle.digest('SHA-256', enc.encode(b)),
  ])
  const [p, q] = [new Uint8Array(x), new Uint8Array(y)]
  let diff = 0
  for (let i = 0; i < p.length; i++) diff |= p[i] ^ q[i]
  return diff === 0
}
