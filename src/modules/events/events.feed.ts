import type { Scope, ServiceDeps } from '../../context.ts'
import type { LiveBus } from '../../live/bus.ts'
import { type AccessCatalogue, loadCatalogue, mayReadEvent, type Readable, readableFor } from './events.access.ts'
import { type EventFilter, logPosition, matchesFilter, readLog } from './events.log.ts'
import type { LoggedEvent } from './events.schemas.ts'

/**
 * One shared reader of a tenant's log per process, fanning events out to that tenant's open
 * streams (docs/live.md "Server-sent events"). A wake-up of the bus (a commit) or the poll timer
 * makes the feed read the log once after its head, in pages, and hand each event to every stream
 * whose caller may read it: a commit costs one query per tenant, not one per stream. Wake-ups that
 * come while a read runs are folded into one more read. The log is the only source of truth: a
 * stream's cursor only moves over what was read from it, so a lost wake-up delays and never loses.
 *
 * A stream joining with a cursor behind the feed's head first catches up on its own reads, then
 * goes live; events are handed over only above its cursor, so none is sent twice or skipped.
 * Access is decided in memory from a catalogue of the tenant's panels and views, reloaded when the
 * events read touch views (`view.*`, an unknown view or panel) and at least every CATALOGUE_MAX_AGE_MS.
 */

export interface FeedSubscriber {
  scope: Scope
  /** Password-protected views the caller unlocked when connecting. */
  unlocked: ReadonlySet<number>
  filter: EventFilter
  /** The view or panel of a scoped path: the stream ends when its caller may no longer read it. */
  bound?: { viewId?: number; panelId?: number }
  /** The seq the stream has read the log up to. Moved by the feed. */
  cursor: number
  /** Writes events to the client; false when the client is too far behind (the stream then ends). */
  send(events: LoggedEvent[]): boolean
  ping(): void
  /** Writes a no-op the client ignores (deps.streamCloseSeenOnWrite). */
  probe(): void
  end(reason: 'closed' | 'access' | 'slow'): void
}

interface Member {
  sub: FeedSubscriber
  live: boolean
  readable?: Readable
  version: number
}

/** Events per read of the log. */
const PAGE = 500
/** The longest the access catalogue is trusted without a reload. */
const CATALOGUE_MAX_AGE_MS = 5_000
/** Reloads for events of views or panels the catalogue does not know (deleted ones) come at most this often. */
const UNKNOWN_RELOAD_MS = 1_000

const feeds = new WeakMap<LiveBus, Map<string, TenantFeed>>()

/**
 * Adds a stream to its tenant's feed (made on first use); returns `leave`, which removes it and,
 * for the last stream of the tenant, stops the feed's timers and bus listener.
 */
export function joinFeed(deps: ServiceDeps, tenantId: string, sub: FeedSubscriber): () => void {
  const byTenant = feeds.get(deps.live) ?? new Map<string, TenantFeed>()
  feeds.set(deps.live, byTenant)
  let feed = byTenant.get(tenantId)
  if (!feed) {
    feed = new TenantFeed(deps, tenantId, () => byTenant.delete(tenantId))
    byTenant.set(tenantId, feed)
  }
  return feed.join(sub)
}

/** Open streams per tenant in this process (for tests and the bench). */
export function openStreams(deps: ServiceDeps, tenantId: string): number {
  return feeds.get(deps.live)?.get(tenantId)?.size ?? 0
}

class TenantFeed {
  private members = new Set<Member>()
  /** Resolved once the head is known (the log's position when the feed was made). */
  private readonly ready: Promise<void>
  /** The seq the feed has read the log up to; every live stream's cursor is at least this. */
  private head = 0
  private reading = false
  private again = false
  private catalogue?: AccessCatalogue
  private loadedAt = 0
  private version = 0
  private readonly timers: ReturnType<typeof setInterval>[]
  private readonly unlisten: () => void
  private readonly onClosed = () => {
    for (const m of [...this.members]) m.sub.end('closed')
  }

  constructor(
    private readonly deps: ServiceDeps,
    private readonly tenantId: string,
    private readonly onEmpty: () => void,
  ) {
    this.ready = logPosition(deps.db, tenantId).then((p) => {
      this.head = Math.max(this.head, p.head)
    })
    this.unlisten = deps.live.listen(tenantId, () => void this.pump())
    const { pollIntervalMs, pingIntervalMs } = deps.config.events
    this.timers = [
      setInterval(() => this.poll(), pollIntervalMs),
      setInterval(() => {
        for (const m of this.members) m.sub.ping()
      }, pingIntervalMs),
    ]
    deps.live.closed.addEventListener('abort', this.onClosed)
  }

  get size() {
    return this.members.size
  }

  join(sub: FeedSubscriber): () => void {
    if (this.deps.live.closed.aborted) {
      sub.end('closed')
      return () => {}
    }
    const member: Member = { sub, live: false, version: -1 }
    this.members.add(member)
    void this.catchUp(member)
    return () => this.leave(member)
  }

  private leave(member: Member) {
    if (!this.members.delete(member) || this.members.size > 0) return
    for (const t of this.timers) clearInterval(t)
    this.unlisten()
    this.deps.live.closed.removeEventListener('abort', this.onClosed)
    this.onEmpty()
  }

  /**
   * The timer's read of the log; where the runtime sees a closed stream only on a write, also a
   * probe of every stream, whether or not it just sent something: the first write after a close
   * still succeeds (the peer's reset comes back to it), the next one fails. So a stream whose client
   * left ends within two poll intervals, not two pings.
   */
  private poll() {
    void this.pump()
    if (this.deps.streamCloseSeenOnWrite) for (const m of this.members) m.sub.probe()
  }

  /** Reads the log after the stream's cursor until it reaches the feed's head, then makes it live. */
  private async catchUp(member: Member) {
    try {
      await this.ready
      // The condition is read synchronously after the last hand-over: no read of the feed can
      // move the head between it and going live.
      while (member.sub.cursor < this.head && this.members.has(member)) {
        const rows = await readLog(this.deps.db, this.tenantId, member.sub.cursor, PAGE)
        if (rows.length === 0) break
        await this.refreshCatalogue(rows)
        if (!this.members.has(member)) return
        this.hand(member, rows)
      }
      member.live = true
    } catch (err) {
      this.deps.log.error('event stream catch-up failed', { tenantId: this.tenantId, error: (err as Error)?.message })
      member.sub.end('closed')
    }
  }

  /** Reads what was committed after the head and hands it out; wake-ups meanwhile make one more read. */
  private async pump() {
    if (this.reading) {
      this.again = true
      return
    }
    this.reading = true
    try {
      do {
        this.again = false
        await this.readNew()
      } while (this.again && this.members.size > 0)
    } catch (err) {
      // The next wake-up or poll reads again from the same head.
      this.deps.log.error('event feed read failed', { tenantId: this.tenantId, error: (err as Error)?.message })
    } finally {
      this.reading = false
    }
  }

  private async readNew() {
    await this.ready
    for (;;) {
      const rows = await readLog(this.deps.db, this.tenantId, this.head, PAGE)
      if (rows.length === 0) return
      await this.refreshCatalogue(rows)
      for (const m of [...this.members]) if (m.live) this.hand(m, rows)
      this.head = rows[rows.length - 1].seq
      if (rows.length < PAGE) return
    }
  }

  /** Hands the events above the stream's cursor that its caller may read and wants; moves its cursor over all. */
  private hand(m: Member, rows: LoggedEvent[]) {
    const { sub } = m
    const last = rows[rows.length - 1].seq
    if (last <= sub.cursor) return
    const readable = this.readableOf(m)
    if (!readable) return
    const out = rows.filter((e) => e.seq > sub.cursor && mayReadEvent(readable, e) && matchesFilter(sub.filter, e))
    sub.cursor = last
    if (out.length > 0 && !sub.send(out)) sub.end('slow')
  }

  /** The member's readable sets under the current catalogue; undefined (and the stream ended) when it lost its scope. */
  private readableOf(m: Member): Readable | undefined {
    if (m.readable && m.version === this.version) return m.readable
    const { sub } = m
    const r = readableFor(this.catalogue!, sub.scope, this.deps.clock.now(), sub.unlocked)
    m.readable = r
    m.version = this.version
    const lost =
      (sub.bound?.viewId !== undefined && !r.views.has(sub.bound.viewId)) ||
      (sub.bound?.panelId !== undefined && !r.panels.has(sub.bound.panelId))
    if (lost) {
      sub.end('access')
      return undefined
    }
    return r
  }

  private async refreshCatalogue(rows: LoggedEvent[]) {
    const age = Date.now() - this.loadedAt
    const cat = this.catalogue
    const stale =
      !cat ||
      age > CATALOGUE_MAX_AGE_MS ||
      rows.some((e) => e.type.startsWith('view.')) ||
      (age > UNKNOWN_RELOAD_MS &&
        rows.some(
          (e) => (e.viewId !== null && !cat.views.has(e.viewId)) || (e.panelId !== null && !cat.panelOwners.has(e.panelId)),
        ))
    if (!stale) return
    this.catalogue = await loadCatalogue(this.deps.db, this.tenantId)
    this.loadedAt = Date.now()
    this.version++
  }
}
