import type { Sql } from 'postgres'
import type { DatabaseConfig } from './database-config.ts'
import { CURSOR_ALIAS, checkHosts, completeCursorBatches, keyOf, planOf, redact, stoppedRead } from './database-read.ts'
import { type ConnectorContext, ConnectorError, type SourceRecord } from './types.ts'

type Row = Record<string, unknown>

/**
 * PostgreSQL reads (`postgres://`): the `postgres` package loaded on first use (STYLE §12), one
 * reserved connection in a `READ ONLY` transaction with `statement_timeout`, rows streamed through
 * a server-side cursor of `batchSize` rows so a large table is never loaded whole.
 */
export async function* readPostgres(config: DatabaseConfig, ctx: ConnectorContext): AsyncIterable<SourceRecord[]> {
  const target = describe(config.connectionString)
  await checkHosts(target.hosts, ctx)
  const secrets = [config.password, target.password]
  const fail = (err: unknown): never => {
    // Ending the client on abort fails what was pending: that is the stop, not a broken connection.
    throw ctx.signal.aborted ? stoppedRead() : toConnectorError(err, target, config, secrets)
  }
  const { default: postgres } = await import('postgres')
  const sql = postgres(config.connectionString, {
    max: config.poolSize,
    ...(config.username ? { username: config.username } : {}),
    ...(config.password !== undefined ? { password: config.password } : {}),
    ...(config.sslMode ? { ssl: config.sslMode === 'disable' ? false : sslOption(config.sslMode) } : {}),
    connect_timeout: Math.max(1, Math.ceil(config.timeout / 1000)),
    idle_timeout: 5,
    prepare: false,
    fetch_types: false,
    onnotice: () => {},
    types: TYPES,
  }) as Sql
  const stop = () => void sql.end({ timeout: 0 }).catch(() => {})
  ctx.signal.addEventListener('abort', stop, { once: true })
  let reserved: Awaited<ReturnType<Sql['reserve']>> | undefined
  try {
    // Aborted before the listener was added (it would never fire): stop before connecting.
    if (ctx.signal.aborted) throw stoppedRead()
    // reserve() waits for an open connection and opens none itself: connect (and authenticate) first.
    await sql.unsafe('SELECT 1').catch(fail)
    reserved = await sql.reserve().catch(fail)
    await reserved.unsafe('BEGIN READ ONLY').catch(fail)
    await reserved.unsafe(`SET LOCAL statement_timeout = ${config.timeout}`).catch(fail)
    const plan = planOf(config, ctx, config.table !== undefined ? 'public' : undefined)
    const keyColumns = config.table !== undefined ? await primaryKey(reserved, plan.from).catch(fail) : []
    if (plan.cursorColumn && keyColumns.length === 0 && !config.keyField) {
      throw new ConnectorError(
        `Incremental sync of table ${config.table} needs a key: the table has no primary key, so set keyField`,
      )
    }
    const toRecord = (row: Row): SourceRecord => {
      const data = plainRow(row)
      return { key: keyOf(data, keyColumns), data }
    }
    const params: unknown[] = []
    let text = `SELECT * FROM ${plan.from}`
    if (plan.cursorColumn) {
      const where = plan.cursor === undefined || plan.cursor === null ? '' : ` AND ${plan.cursorColumn} > $1`
      if (where) params.push(plan.cursor)
      text = `SELECT *, (${plan.cursorColumn})::text AS "${CURSOR_ALIAS}" FROM ${plan.from}
        WHERE ${plan.cursorColumn} IS NOT NULL${where} ORDER BY ${plan.cursorColumn}`
    }
    const pages = pagesOf(reserved.unsafe(text, params as never[]).cursor(config.batchSize), ctx, fail)
    if (plan.cursorColumn) yield* completeCursorBatches(pages, ctx, toRecord)
    else for await (const page of pages) yield page.map(toRecord)
    await reserved.unsafe('ROLLBACK').catch(() => {})
  } finally {
    ctx.signal.removeEventListener('abort', stop)
    reserved?.release()
    await sql.end({ timeout: 1 }).catch(() => {})
  }
}

// --- Internal helpers ---

const asText = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v))
/**
 * Dates and zone-less timestamps as the server writes them (no shift through the local time
 * zone); cursor values sent as the exact text read (microseconds kept), not through a JS Date.
 */
const TYPES = {
  date: { to: 1082, from: [1082], serialize: asText, parse: (v: string) => v },
  timestamp: { to: 1114, from: [1114], serialize: asText, parse: (v: string) => v.replace(' ', 'T') },
  timestamptz: { to: 1184, from: [] as number[], serialize: asText, parse: (v: string) => v },
}

interface Target {
  hosts: string[]
  user?: string
  password?: string
}

/** Hosts, user and password of a connection string, read by hand (multi-host lists are not URLs). */
function describe(connectionString: string): Target {
  const rest = connectionString.slice(connectionString.indexOf('://') + 3)
  const authority = rest.split(/[/?#]/)[0]
  const at = authority.lastIndexOf('@')
  const userinfo = at === -1 ? '' : authority.slice(0, at)
  const hostList = at === -1 ? authority : authority.slice(at + 1)
  const hosts = hostList
    .split(',')
    .map((h) => (h.startsWith('[') ? h.slice(1, h.indexOf(']')) : h.split(':')[0]))
    .map(safeDecode)
  const query = rest.includes('?') ? new URLSearchParams(rest.slice(rest.indexOf('?') + 1)) : undefined
  for (const h of query?.getAll('host') ?? []) hosts.push(...h.split(','))
  const colon = userinfo.indexOf(':')
  return {
    hosts,
    user: safeDecode(colon === -1 ? userinfo : userinfo.slice(0, colon)) || undefined,
    password: colon === -1 ? (query?.get('password') ?? undefined) : safeDecode(userinfo.slice(colon + 1)),
  }
}

function safeDecode(v: string) {
  try {
    return decodeURIComponent(v)
  } catch {
    return v
  }
}

const sslOption = (mode: string) => (mode === 'verify-ca' || mode === 'verify-full' ? 'verify-full' : mode) as 'require'

/** The table's primary-key columns in key order (none for a view or a table without one). */
async function primaryKey(sql: Sql, from: string): Promise<string[]> {
  const rows = await sql.unsafe(
    `SELECT a.attname AS name FROM pg_index i
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
     WHERE i.indrelid = to_regclass($1) AND i.indisprimary
     ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    [from],
  )
  return rows.map((r) => String(r.name))
}

async function* pagesOf(
  cursor: AsyncIterable<Row[]>,
  ctx: ConnectorContext,
  fail: (err: unknown) => never,
): AsyncIterable<Row[]> {
  const it = cursor[Symbol.asyncIterator]()
  let finished = false
  try {
    for (;;) {
      if (ctx.signal.aborted) throw stoppedRead()
      const next = await it.next().catch(fail)
      if (next.done) {
        finished = true
        return
      }
      yield next.value
    }
  } finally {
    if (!finished) await Promise.resolve(it.return?.()).catch(() => {})
  }
}

/** A row as JSON-ready data: binary as base64 (timestamps stay Dates, serialised as ISO text). */
function plainRow(row: Row): Row {
  const out: Row = {}
  for (const [k, v] of Object.entries(row)) {
    if (k === CURSOR_ALIAS) continue
    out[k] = v instanceof Uint8Array ? base64(v) : v
  }
  return out
}

function base64(bytes: Uint8Array): string {
  let text = ''
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(text)
}

/** A driver failure as a message safe for `errorMessage`: never the password or connection string. */
function toConnectorError(err: unknown, target: Target, config: DatabaseConfig, secrets: (string | undefined)[]) {
  if (err instanceof ConnectorError) return err
  const e = err as { code?: string; message?: string; errno?: string }
  const where = `PostgreSQL at ${target.hosts.join(',') || 'localhost'}`
  const user = config.username ?? target.user ?? 'postgres'
  let message: string
  switch (e.code) {
    case '28P01':
      message = `${where} refused the password for user "${user}" (authentication failed)`
      break
    case '28000':
      message = `${where} refused user "${user}": ${e.message}`
      break
    case '57014':
      message = `The query was cancelled by ${where} after the statement timeout of ${config.timeout} ms (config.timeout)`
      break
    case '25006':
      message = `The query tried to write, and database sources only read: ${e.message}`
      break
    case 'ECONNREFUSED':
      message = `Could not connect to ${where}: connection refused`
      break
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      message = `Could not connect to ${where}: host not found`
      break
    case 'CONNECT_TIMEOUT':
      message = `Could not connect to ${where}: no answer within ${config.timeout} ms`
      break
    case 'CONNECTION_ENDED':
    case 'CONNECTION_DESTROYED':
      message = `The connection to ${where} ended before the read finished`
      break
    default:
      // workerd's sockets carry no code: a connection it could not open (refused or unreachable
      // alike) is this message.
      if (!e.code && /cannot connect to the specified address/i.test(e.message ?? '')) {
        message = `Could not connect to ${where}: connection refused or address unreachable`
        break
      }
      message = /^[0-9A-Z]{5}$/.test(e.code ?? '')
        ? `${where} answered an error (${e.code}): ${e.message}`
        : `Reading from ${where} failed${e.code ? ` (${e.code})` : ''}`
  }
  return new ConnectorError(redact(message, [...secrets, config.connectionString]), { cause: undefined })
}
