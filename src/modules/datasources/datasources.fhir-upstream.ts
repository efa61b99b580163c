import { FHIR_JSON, type FhirConfig, outcomeText } from '../../connectors/fhir.ts'
import { sourceClient } from '../../connectors/shared/source-client.ts'
import { type ConnectorContext, ConnectorError } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import type { DataSourceRow } from './datasources.schemas.ts'
import { connectorBase } from './datasources.sync-read.ts'

/**
 * Requests of a live `fhir` source to its FHIR server outside a sync run (a Subscription's POST,
 * GET and DELETE, an id-only read): the source's authentication, retries and timeout, behind the
 * egress guard, with OperationOutcomes named.
 */

/** DELETE of an upstream Subscription; a 404 or 410 is fine (already gone), other failures are logged. */
export async function deleteUpstream(ctx: ServiceContext, source: DataSourceRow, upstreamId: string, config: FhirConfig) {
  try {
    const client = fhirClient(ctx, source, config, (res) => (res.status === 404 || res.status === 410 ? 'gone' : undefined))
    const res = await client.send(`${baseOf(config)}/Subscription/${encodeURIComponent(upstreamId)}`, {
      method: 'DELETE',
      headers: { Accept: FHIR_JSON },
    })
    await res.body?.cancel().catch(() => {})
  } catch (err) {
    if (err instanceof ConnectorError && err.message === 'gone') return
    ctx.log.warn('fhir subscription not deleted', { dataSourceId: source.id, upstreamId, error: (err as Error)?.message })
  }
}

/**
 * The HTTP client of a source outside a sync run: its authentication, retries and timeout, behind
 * the egress guard. `describe` may name a failure (its text becomes the ConnectorError's message).
 */
export function fhirClient(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig,
  describe?: (res: Response, body: string) => string | undefined,
) {
  return sourceClient(pushConnectorContext(ctx, source), config, 'FHIR server', (res, body) => {
    const own = describe?.(res, body)
    if (own !== undefined) return own
    const outcome = outcomeText(body)
    return outcome && `FHIR server responded ${res.status} with an OperationOutcome: ${outcome}`
  })
}

export const baseOf = (config: { baseUrl: string }) => config.baseUrl.replace(/\/+$/, '')

/** The connector context of a request made outside a sync run (a Subscription's POST, an id-only read). */
function pushConnectorContext(ctx: ServiceContext, source: DataSourceRow): ConnectorContext {
  return {
    ...connectorBase(ctx, source, AbortSignal.timeout(ctx.config.syncLimits.timeoutMs)),
    advanceCursor: () => {},
    truncated: () => {},
  }
}
