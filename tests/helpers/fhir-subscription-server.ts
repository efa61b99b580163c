import type { IncomingMessage, ServerResponse } from 'node:http'
import { type FixtureServer, startJsonServer } from './servers.ts'

type Resource = Record<string, unknown> & { resourceType: string; id: string }

const PAYLOAD_CONTENT = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/backport-payload-content'

/** A Subscription the fixture holds, and its own event counter. */
export interface HeldSubscription {
  id: string
  resource: Record<string, any>
  status: 'requested' | 'active' | 'error' | 'off'
  /** events-since-subscription-start: the number of the last event made. */
  events: number
  backport: boolean
  payload: 'id-only' | 'full-resource' | 'empty'
  endpoint: string
  headers: Record<string, string>
}

/** One notification sent to a channel, and what the receiver answered. */
export interface Sent {
  subscription: string
  type: string
  status: number
  body: unknown
  /** Milliseconds from the send to the receiver's answer. */
  ms: number
}

/** How a change is announced. */
export interface NotifyOptions {
  /** The event is numbered but never sent (a lost notification: the receiver sees a gap next time). */
  skip?: boolean
  /** The notification is sent twice. */
  duplicate?: boolean
}

/**
 * A FHIR R4 server on loopback for Subscription sources: it keeps resources (each change stamps
 * `meta.lastUpdated` and `versionId`), answers reads by id (410 once deleted, 404 when unknown) and
 * searches `GET /fhir/{type}` with `_lastUpdated=gt|ge|lt…` and `_count`, accepts Subscriptions —
 * the R4 backport profile (topic, payload-content extension) and classic R4 criteria — answers
 * them by id, deletes them, and sends rest-hook notifications to their channel with the channel
 * headers: a handshake after the create (backport), heartbeats and event notifications on demand,
 * with lost notifications, duplicates, an `error` status or a dropped subscription on demand.
 * Every request may be required to carry `Authorization: Bearer <token>`.
 */
export async function startSubscriptionServer(options: { token?: string } = {}) {
  const resources = new Map<string, Resource>()
  const deleted = new Set<string>()
  const subscriptions = new Map<string, HeldSubscription>()
  const sent: Sent[] = []
  const searches: string[] = []
  /** `searchDelayMs`: searches answer this much later (a sync that takes its time). */
  const state = { searchDelayMs: 0 }
  const reads: string[] = []
  let nextId = 1
  let server: FixtureServer | undefined
  const base = () => `${server!.url}/fhir`

  async function deliver(sub: HeldSubscription, type: string, entries: Record<string, unknown>[] = [], numbers: number[] = []) {
    const status = {
      resourceType: 'Parameters',
      meta: {
        profile: ['http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/backport-subscription-status-r4'],
      },
      parameter: [
        { name: 'subscription', valueReference: { reference: `${base()}/Subscription/${sub.id}` } },
        { name: 'topic', valueCanonical: sub.resource.criteria },
        { name: 'status', valueCode: sub.status === 'requested' ? 'requested' : sub.status },
        { name: 'type', valueCode: type },
        // A handshake comes before any event: 0 (the backport IG's examples).
        { name: 'events-since-subscription-start', valueString: String(type === 'handshake' ? 0 : sub.events) },
        ...numbers.map((n, i) => ({
          name: 'notification-event',
          part: [
            { name: 'event-number', valueString: String(n) },
            { name: 'timestamp', valueInstant: new Date().toISOString() },
            ...(entries[i]
              ? [{ name: 'focus', valueReference: { reference: (entries[i].request as { url: string }).url } }]
              : []),
          ],
        })),
      ],
    }
    const bundle = {
      resourceType: 'Bundle',
      type: 'history',
      timestamp: new Date().toISOString(),
      entry: [
        {
          fullUrl: `urn:uuid:${crypto.randomUUID()}`,
          resource: status,
          request: { method: 'GET', url: `${base()}/Subscription/${sub.id}/$status` },
          response: { status: '200' },
        },
        ...entries,
      ],
    }
    return post(sub, type, JSON.stringify(bundle))
  }

  async function post(sub: HeldSubscription, type: string, body: string) {
    const started = performance.now()
    const res = await fetch(sub.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/fhir+json', ...sub.headers },
      body: body === '' ? undefined : body,
    })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {}
    const record = { subscription: sub.id, type, status: res.status, body: parsed, ms: performance.now() - started }
    sent.push(record)
    return record
  }

  function entryOf(sub: HeldSubscription, resource: Resource, method: 'PUT' | 'DELETE') {
    const url = `${resource.resourceType}/${resource.id}`
    return {
      fullUrl: `${base()}/${url}`,
      ...(sub.payload === 'full-resource' && method !== 'DELETE' ? { resource } : {}),
      request: { method, url },
      response: { status: method === 'DELETE' ? '204' : '200' },
    }
  }

  /** Announces a change to every active subscription; answers what each receiver said. */
  async function announce(resource: Resource, method: 'PUT' | 'DELETE', opts: NotifyOptions = {}) {
    const out: Sent[] = []
    for (const sub of subscriptions.values()) {
      if (sub.status === 'off') continue
      sub.events++
      if (opts.skip) continue
      if (!sub.backport) {
        out.push(await post(sub, 'event-notification', sub.payload === 'full-resource' ? JSON.stringify(resource) : ''))
        continue
      }
      const once = () => deliver(sub, 'event-notification', [entryOf(sub, resource, method)], [sub.events])
      out.push(await once())
      if (opts.duplicate) out.push(await once())
    }
    return out
  }

  function stamp(resource: Resource): Resource {
    const key = `${resource.resourceType}/${resource.id}`
    const version = Number((resources.get(key)?.meta as { versionId?: string } | undefined)?.versionId ?? 0) + 1
    return {
      ...resource,
      meta: { ...(resource.meta as object), versionId: String(version), lastUpdated: new Date().toISOString() },
    }
  }

  function send(res: ServerResponse, status: number, body?: unknown) {
    res.writeHead(status, { 'content-type': 'application/fhir+json' })
    res.end(body === undefined ? undefined : JSON.stringify(body))
  }

  const outcome = (code: string, diagnostics: string) => ({
    resourceType: 'OperationOutcome',
    issue: [{ severity: 'error', code, diagnostics }],
  })

  function handle(req: IncomingMessage & { body: string }, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x')
    if (options.token && req.headers.authorization !== `Bearer ${options.token}`) {
      return send(res, 401, outcome('login', 'Authentication required'))
    }
    const [, fhir, type, id, ...rest] = url.pathname.split('/')
    if (fhir !== 'fhir' || !type || rest.length > 0) return send(res, 404, outcome('not-found', `No route ${url.pathname}`))
    if (type === 'Subscription') return subscriptionRoute(req, res, id)
    if (id) {
      reads.push(`${type}/${id}`)
      if (deleted.has(`${type}/${id}`)) return send(res, 410, outcome('deleted', `${type}/${id} was deleted`))
      const found = resources.get(`${type}/${id}`)
      return found ? send(res, 200, found) : send(res, 404, outcome('not-found', `${type}/${id} is not known`))
    }
    searches.push(`${url.pathname}${url.search}`)
    const answer = (status: number, body: unknown) =>
      state.searchDelayMs > 0 ? setTimeout(() => send(res, status, body), state.searchDelayMs) : send(res, status, body)
    let matches = [...resources.values()].filter((r) => r.resourceType === type)
    for (const bound of url.searchParams.getAll('_lastUpdated')) {
      const [, prefix, at] = /^(gt|ge|lt|le|eq)?(.+)$/.exec(bound) ?? []
      const t = new Date(at).getTime()
      matches = matches.filter((r) => {
        const u = new Date((r.meta as { lastUpdated: string }).lastUpdated).getTime()
        return prefix === 'gt' ? u > t : prefix === 'ge' ? u >= t : prefix === 'lt' ? u < t : prefix === 'le' ? u <= t : u === t
      })
    }
    // The matches are taken now: a slow answer shows the server as it was when the search came.
    answer(200, {
      resourceType: 'Bundle',
      type: 'searchset',
      total: matches.length,
      entry: matches.map((resource) => ({
        fullUrl: `${base()}/${type}/${resource.id}`,
        resource,
        search: { mode: 'match' },
      })),
    })
  }

  function subscriptionRoute(req: IncomingMessage & { body: string }, res: ServerResponse, id: string | undefined) {
    if (req.method === 'POST' && !id) {
      const resource = JSON.parse(req.body) as Record<string, any>
      const channel = resource.channel ?? {}
      const backport = (resource.meta?.profile ?? []).some((p: string) => p.endsWith('/backport-subscription'))
      const content = channel._payload?.extension?.find((e: { url: string }) => e.url === PAYLOAD_CONTENT)?.valueCode
      const headers = Object.fromEntries(
        (channel.header ?? []).map((h: string) => [h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]),
      )
      const sub: HeldSubscription = {
        id: `sub-${nextId++}`,
        resource: { ...resource, status: 'requested' },
        status: 'requested',
        events: 0,
        backport,
        payload: backport ? content : channel.payload ? 'full-resource' : 'empty',
        endpoint: channel.endpoint,
        headers,
      }
      sub.resource.id = sub.id
      subscriptions.set(sub.id, sub)
      send(res, 201, sub.resource)
      // The handshake follows the answer, as real servers send it.
      if (backport) {
        setTimeout(async () => {
          const sentHandshake = await deliver(sub, 'handshake').catch(() => undefined)
          if (sentHandshake && sentHandshake.status < 300 && sub.status === 'requested') sub.status = 'active'
          if (!sentHandshake || sentHandshake.status >= 300) sub.status = 'error'
        }, 5)
      } else sub.status = 'active'
      return
    }
    const sub = id ? subscriptions.get(id) : undefined
    if (!sub) return send(res, 404, outcome('not-found', `Subscription/${id} is not known`))
    if (req.method === 'DELETE') {
      subscriptions.delete(sub.id)
      return send(res, 200, outcome('informational', 'deleted'))
    }
    return send(res, 200, { ...sub.resource, status: sub.status })
  }

  server = await startJsonServer(handle)

  return {
    server,
    state,
    baseUrl: base(),
    subscriptions,
    sent,
    searches,
    reads,
    resources,
    /** Stores a resource without telling anyone (a change a Subscription did not see). */
    put(resource: Resource): Resource {
      const stored = stamp(resource)
      resources.set(`${resource.resourceType}/${resource.id}`, stored)
      deleted.delete(`${resource.resourceType}/${resource.id}`)
      return stored
    },
    /** Stores a resource and sends an event notification to each subscription. */
    async change(resource: Resource, opts: NotifyOptions = {}) {
      return announce(this.put(resource), 'PUT', opts)
    },
    /** Stores and deletes several resources, then sends one notification carrying all their events. */
    async batch(puts: Resource[], deletes: { type: string; id: string }[] = []) {
      const changes = [
        ...puts.map((r) => ({ resource: this.put(r), method: 'PUT' as const })),
        ...deletes.map(({ type, id }) => {
          const key = `${type}/${id}`
          const resource = (resources.get(key) ?? { resourceType: type, id }) as Resource
          resources.delete(key)
          deleted.add(key)
          return { resource, method: 'DELETE' as const }
        }),
      ]
      const out: Sent[] = []
      for (const sub of subscriptions.values()) {
        if (sub.status === 'off' || !sub.backport) continue
        const numbers = changes.map(() => ++sub.events)
        out.push(
          await deliver(
            sub,
            'event-notification',
            changes.map((c) => entryOf(sub, c.resource, c.method)),
            numbers,
          ),
        )
      }
      return out
    },
    /** Deletes a resource (reads answer 410) and sends the DELETE event. */
    async remove(type: string, id: string, opts: NotifyOptions = {}) {
      const key = `${type}/${id}`
      const resource = resources.get(key) ?? { resourceType: type, id }
      resources.delete(key)
      deleted.add(key)
      return announce(resource as Resource, 'DELETE', opts)
    },
    /** A heartbeat to each subscription (or one), with its counter and status. */
    async heartbeat(only?: string) {
      const out: Sent[] = []
      for (const sub of subscriptions.values()) if (!only || sub.id === only) out.push(await deliver(sub, 'heartbeat'))
      return out
    },
    /** The subscription's status as the server reports it next (`error`: it could not deliver). */
    setStatus(id: string, status: HeldSubscription['status']) {
      subscriptions.get(id)!.status = status
    },
    /** The server forgets the subscription: reads of it answer 404, nothing is sent any more. */
    drop(id: string) {
      subscriptions.delete(id)
    },
    /** The subscription's counter restarts past what was sent (a server restart that lost notifications). */
    restart(id: string, events: number) {
      subscriptions.get(id)!.events = events
    },
    only(): HeldSubscription {
      const all = [...subscriptions.values()]
      if (all.length !== 1) throw new Error(`expected one subscription, the server holds ${all.length}`)
      return all[0]
    },
    reset() {
      state.searchDelayMs = 0
      resources.clear()
      deleted.clear()
      subscriptions.clear()
      sent.length = 0
      searches.length = 0
      reads.length = 0
      server!.requests.length = 0
    },
    close: () => server!.close(),
  }
}

export type SubscriptionServer = Awaited<ReturnType<typeof startSubscriptionServer>>

const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length'])

/**
 * A loopback front for the app under test, the address given as PUBLIC_BASE_URL: it hands each
 * request to `target()` (the app's `fetch`), so a FHIR server can reach an app that runs in-process
 * or in another runtime.
 */
export async function startRelay(target: () => (request: Request) => Response | Promise<Response>) {
  return startJsonServer(async (req, res) => {
    const headers = new Headers()
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === 'string' && !HOP_BY_HOP.has(k)) headers.set(k, v)
    }
    const request = new Request(`http://localhost${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' || req.body === '' ? undefined : req.body,
    })
    const answer = await target()(request)
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' })
    res.end(Buffer.from(await answer.arrayBuffer()))
  })
}
