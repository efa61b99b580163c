import { EgressError } from './errors.ts'
import { isIpLiteral, nonPublicReason } from './ip.ts'

/** The runtime's DNS lookup: the addresses a host name resolves to. */
export type ResolveHost = (hostname: string) => Promise<string[]>

export const MAX_REDIRECTS = 5
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/**
 * The only request headers that follow a redirect to another origin (scheme, host or port differ).
 * Every other header may carry a credential the guard cannot recognise by name (an api-key header
 * named by the source, a user's custom header), so it is dropped rather than listed. These are the
 * Fetch standard's CORS-safelisted request headers (what a browser sends to any origin unasked),
 * plus the negotiation headers every client sends (Accept-Encoding, User-Agent) and RFC 7240
 * Prefer (FHIR bulk's `respond-async`): none names or proves who is calling.
 */
const CROSS_ORIGIN_HEADERS = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'content-language',
  'content-type',
  'prefer',
  'user-agent',
])

export interface GuardedFetchOptions {
  fetch: typeof fetch
  /** The runtime's resolver; undefined where there is no DNS API (then only literals are checked). */
  resolveHost?: ResolveHost
  /** ALLOW_PRIVATE_NETWORK_SOURCES: skip the address checks (scheme and redirect limits stay). */
  allowPrivate: boolean
  /** false: a redirect is answered as it is, never followed (outbound webhooks). Default true. */
  followRedirects?: boolean
  /** What the refusal message says private addresses are not allowed for (default: data sources). */
  purpose?: string
}

export type GuardedFetch = (input: string | URL, init?: RequestInit) => Promise<Response>

const refuse = (host: string, reason: string, purpose = 'data sources') =>
  new EgressError(
    `Refusing to connect to ${host}: it is a ${reason} address, and private network addresses are not allowed for ${purpose} (ALLOW_PRIVATE_NETWORK_SOURCES=false)`,
  )

/**
 * The guard's check of one URL without fetching it (the same rules as every hop of a guarded
 * fetch): throws an EgressError naming why the URL is refused. Used to validate a URL when it is
 * stored (outbound webhook subscriptions) as well as when it is called.
 */
export async function checkOutboundUrl(url: URL, options: Omit<GuardedFetchOptions, 'fetch' | 'followRedirects'>) {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressError(`Only http and https URLs are allowed, not ${url.protocol.replace(/:$/, '')}`)
  }
  if (options.allowPrivate) return
  const host = url.hostname.replace(/\.$/, '').toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost')) throw refuse(host, 'loopback', options.purpose)
  if (isIpLiteral(host)) {
    const reason = nonPublicReason(host)
    if (reason) throw refuse(host, reason, options.purpose)
    return
  }
  if (!options.resolveHost) return
  let addresses: string[]
  try {
    addresses = await options.resolveHost(host)
  } catch {
    throw new EgressError(`Could not resolve host ${host}`)
  }
  for (const address of addresses) {
    const reason = nonPublicReason(address)
    if (reason) throw refuse(`${host} (${address})`, reason, options.purpose)
  }
}

/**
 * The only way connectors reach the network (DATA-ENGINE: safety rules). Refuses non-http(s)
 * URLs and, unless `allowPrivate`, hosts that are or resolve to loopback, private, link-local,
 * unspecified, CGNAT or multicast addresses (IPv4-mapped IPv6 included). Redirects are followed
 * by hand (at most 5) so each target is checked the same way. Once a redirect leaves the origin
 * (a change of scheme, https to http included, counts, as in browsers), only CROSS_ORIGIN_HEADERS
 * go on, also on a later hop back to the first origin, and a request body is never resent there
 * (a 307/308 to another origin is refused: the body may hold a secret, e.g. OAuth2
 * client_secret_post). The check resolves the name before fetch resolves it again, so a DNS
 * answer that changes in between (rebinding) is not caught; an egress firewall covers that.
 */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const check = (url: URL) => checkOutboundUrl(url, options)

  return async function guardedFetch(input, init = {}) {
    let url: URL
    try {
      url = new URL(String(input))
    } catch {
      throw new EgressError(`Invalid URL: ${String(input).slice(0, 200)}`)
    }
    let method = (init.method ?? 'GET').toUpperCase()
    let body = init.body
    const headers = new Headers(init.headers)
    for (let hop = 0; ; hop++) {
      await check(url)
      const res = await options.fetch(url, { ...init, method, body, headers, redirect: 'manual' })
      const location = res.headers.get('location')
      if (!REDIRECT_STATUSES.has(res.status) || !location || options.followRedirects === false) return res
      await res.body?.cancel().catch(() => {})
      if (hop >= MAX_REDIRECTS) throw new EgressError(`Too many redirects (more than ${MAX_REDIRECTS})`)
      const next = new URL(location, url)
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET'
        body = undefined
        headers.delete('content-type')
      }
      if (next.origin !== url.origin) {
        if (body != null) {
          throw new EgressError(
            `Refusing to resend the request body to another origin (a ${res.status} redirect to ${next.origin})`,
          )
        }
        for (const name of [...headers.keys()]) if (!CROSS_ORIGIN_HEADERS.has(name)) headers.delete(name)
      }
      url = next
    }
  }
}
