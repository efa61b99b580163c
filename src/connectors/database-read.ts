import { isIpLiteral, nonPublicReason } from '../lib/egress/ip.ts'
import { quoteIdent } from '../lib/sql.ts'
import type { DatabaseConfig } from './database-config.ts'
import { type ConnectorContext, ConnectorError, type SourceRecord } from './types.ts'

/**
 * What the PostgreSQL and SQLite readers of a `database` source share: the plan of what to read,
 * row keys, batches cut at complete cursor values, the private-address guard, and redaction.
 */

/** The column the cursor value is read into (text form), removed from the records. */
export const CURSOR_ALIAS = '__panels_cursor'

/** What both drivers read: the SQL source of rows and the key columns, once resolved. */
export interface ReadPlan {
  /** `"schema"."table"` or `(query) AS q`, ready to follow FROM. */
  from: string
  /** Quoted incremental column, when incremental. */
  cursorColumn?: string
  /** The stored cursor (config `lastSyncValue`); undefined or null reads from the start. */
  cursor?: string | number | null
}

export function planOf(config: DatabaseConfig, ctx: ConnectorContext, defaultSchema?: string): ReadPlan {
  const schema = config.schema ?? defaultSchema
  const from =
    config.table !== undefined
      ? `${schema ? `${quoteIdent(schema)}.` : ''}${quoteIdent(config.table)}`
      : `(${config.query!.trim().replace(/;\s*$/, '')}) AS q`
  const cursor = ctx.cursor ?? config.lastSyncValue
  return {
    from,
    cursorColumn: config.incrementalColumn === undefined ? undefined : quoteIdent(config.incrementalColumn),
    cursor: typeof cursor === 'string' || typeof cursor === 'number' ? cursor : undefined,
  }
}

/** The key of a row from its primary-key columns: the value, or a JSON array for several. */
export function keyOf(row: Record<string, unknown>, keyColumns: string[]): string | undefined {
  if (keyColumns.length === 0) return undefined
  const values = keyColumns.map((c) => row[c])
  if (values.some((v) => v === null || v === undefined)) return undefined
  return values.length === 1 ? (typeof values[0] === 'string' ? values[0] : JSON.stringify(values[0])) : JSON.stringify(values)
}

/**
 * Regroups ordered rows so each batch ends at a complete cursor value: rows sharing the last
 * value of a batch wait for the next one (a sync stopped after a batch resumes with `> cursor`
 * and must not skip the rest of a tie). Calls `advanceCursor` before yielding each batch.
 */
export async function* completeCursorBatches(
  pages: AsyncIterable<Record<string, unknown>[]>,
  ctx: ConnectorContext,
  toRecord: (row: Record<string, unknown>) => SourceRecord,
): AsyncIterable<SourceRecord[]> {
  let carry: Record<string, unknown>[] = []
  for await (const page of pages) {
    const rows = carry.length > 0 ? carry.concat(page) : page
    if (rows.length === 0) continue
    const last = rows[rows.length - 1][CURSOR_ALIAS]
    let cut = rows.length
    while (cut > 0 && rows[cut - 1][CURSOR_ALIAS] === last) cut--
    if (cut === 0) {
      carry = rows
      continue
    }
    carry = rows.slice(cut)
    const done = rows.slice(0, cut)
    ctx.advanceCursor(done[done.length - 1][CURSOR_ALIAS])
    yield done.map(toRecord)
  }
  if (carry.length > 0) {
    ctx.advanceCursor(carry[carry.length - 1][CURSOR_ALIAS])
    yield carry.map(toRecord)
  }
}

/**
 * The private-address guard for database hosts (DATA-ENGINE: safety rules), as the guarded fetch
 * applies it to URLs: unless ALLOW_PRIVATE_NETWORK_SOURCES, loopback, private, link-local and
 * unix-socket targets are refused, names after resolving them with the runtime's resolver.
 */
export async function checkHosts(hosts: string[], ctx: ConnectorContext): Promise<void> {
  if (ctx.allowPrivateNetwork) return
  for (const raw of hosts) {
    const host = raw.replace(/\.$/, '').toLowerCase()
    if (host === '' || host === 'localhost' || host.endsWith('.localhost') || host.startsWith('/')) {
      throw refuse(host || 'localhost', host.startsWith('/') ? 'local (unix socket)' : 'loopback')
    }
    if (isIpLiteral(host)) {
      const reason = nonPublicReason(host)
      if (reason) throw refuse(host, reason)
      continue
    }
    if (!ctx.resolveHost) continue
    let addresses: string[]
    try {
      addresses = await ctx.resolveHost(host)
    } catch {
      throw new ConnectorError(`Could not resolve database host ${host}`)
    }
    for (const address of addresses) {
      const reason = nonPublicReason(address)
      if (reason) throw refuse(`${host} (${address})`, reason)
    }
  }
}

const refuse = (host: string, reason: string) =>
  new ConnectorError(
    `Refusing to connect to database host ${host}: it is a ${reason} address, and private network addresses are not allowed for data sources (ALLOW_PRIVATE_NETWORK_SOURCES=false)`,
  )

/** The failure of a read stopped by `ctx.signal` (the sync's time limit, a cancel, a stopping service). */
export const stoppedRead = () => new ConnectorError('The database read was stopped (time limit or cancellation)')

/** Replaces every occurrence of the secrets in a driver message (defence in depth). */
export function redact(message: string, secrets: (string | undefined)[]): string {
  let out = message
  for (const s of secrets) {
    if (!s || s.length < 2) continue
    out = out.split(s).join('<SECRET>')
    const encoded = encodeURIComponent(s)
    if (encoded !== s) out = out.split(encoded).join('<SECRET>')
  }
  return out
}
