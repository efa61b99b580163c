import type { ServiceDeps } from '../../context.ts'
import { invalid } from '../../errors.ts'
import { EgressError } from '../../lib/egress/errors.ts'
import { checkOutboundUrl } from '../../lib/egress/guarded-fetch.ts'

/** What the guard's refusals say private addresses are not allowed for. */
export const WEBHOOK_PURPOSE = 'webhook subscriptions'

/**
 * Why `url` may not receive deliveries, or undefined when it may (docs/live.md "Outbound
 * webhooks"): only `https://` in production (`http://` too in development and test), and the
 * outbound network guard of api/fhir sources (no loopback or private address unless
 * ALLOW_PRIVATE_NETWORK_SOURCES). Checked when a subscription is stored and before every attempt,
 * since a name may resolve elsewhere later.
 */
export async function urlRefusal(deps: ServiceDeps, url: string): Promise<string | undefined> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'must be an absolute URL'
  }
  if (deps.config.env === 'production' && parsed.protocol !== 'https:') return 'must be an https:// URL in production'
  if (parsed.username || parsed.password) return 'must not carry credentials (the signature authenticates deliveries)'
  try {
    await checkOutboundUrl(parsed, {
      allowPrivate: deps.config.allowPrivateNetworkSources,
      resolveHost: deps.outbound.resolveHost,
      purpose: WEBHOOK_PURPOSE,
    })
  } catch (err) {
    if (err instanceof EgressError) return err.message
    throw err
  }
  return undefined
}

/** A 400 naming `url` when it may not receive deliveries. */
export async function requireDeliverableUrl(deps: ServiceDeps, url: string) {
  const refusal = await urlRefusal(deps, url)
  if (refusal) throw invalid([{ path: 'url', message: refusal }])
}
