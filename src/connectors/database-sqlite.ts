import { FileAccessError } from '../lib/files.ts'
import { quoteIdent, type SqlReader, type SqlValue } from '../lib/sql.ts'
import { type DatabaseConfig, sqlitePath } from './database-config.ts'
import { CURSOR_ALIAS, checkHosts, completeCursorBatches, keyOf, planOf, redact, stoppedRead } from './database-read.ts'
import { type ConnectorContext, ConnectorError, type SourceRecord } from './types.ts'

type Row = Record<string, unknown>

/**
 * SQLite/libSQL reads (`file:` under FILES_DIR, `libsql://`) through the runtime's `openSqlite`,
 * read-only, in LIMIT/OFFSET pages of `batchSize` rows (keyset by the cursor column when
 * incremental, so a stopped sync resumes where its last committed batch ended).
 */
export async function* readSqlite(config: DatabaseConfig, ctx: ConnectorContext): AsyncIterable<SourceRecord[]> {
  if (!ctx.openSqlite) {
    throw new ConnectorError(`SQLite and libSQL databases cannot be read on the ${ctx.runtime} runtime (no driver)`)
  }
  const remote = !/^file:/i.test(config.connectionString)
  const url = remote ? new URL(config.connectionString) : undefined
  if (url) await checkHosts([url.hostname.replace(/^\[|\]$/g, '')], ctx)
  const authToken = config.authToken ?? config.password ?? url?.searchParams.get('authToken') ?? undefined
  const secrets = [authToken, config.password]
  const where = remote ? `libSQL server ${url!.host}` : `SQLite file ${sqlitePath(config.connectionString)}`
  const fail = (err: unknown): never => {
    if (err instanceof ConnectorError) throw err
    if (err instanceof FileAccessError) throw new ConnectorError(err.message)
    const message = (err as Error)?.message ?? String(err)
    throw new ConnectorError(redact(`Reading ${where} failed: ${message.replace(/^(SQLITE_\w+: )+/, '')}`, secrets))
  }
  const db = await ctx
    .openSqlite(remote ? { url: config.connectionString, authToken } : { path: sqlitePath(config.connectionString) })
    .catch(fail)
  try {
    const read = (sql: string, args: SqlValue[] = []) => {
      if (ctx.signal.aborted) throw stoppedRead()
      return withLimits(db.query(sql, args), config.timeout, ctx.signal, where).catch(fail)
    }
    const plan = planOf(config, ctx)
    const keyColumns = config.table !== undefined ? await primaryKey(read, config.table) : []
    if (plan.cursorColumn && keyColumns.length === 0 && !config.keyField) {
      throw new ConnectorError(
        `Incremental sync of table ${config.table} needs a key: the table has no primary key, so set keyField`,
      )
    }
    const toRecord = (row: Row): SourceRecord => {
      const { [CURSOR_ALIAS]: _cursor, ...data } = row
      return { key: keyOf(data, keyColumns), data }
    }
    if (!plan.cursorColumn) {
      for (let offset = 0; ; offset += config.batchSize) {
        const { rows } = await read(`SELECT * FROM ${plan.from} LIMIT ? OFFSET ?`, [config.batchSize, offset])
        if (rows.length > 0) yield rows.map(toRecord)
        if (rows.length < config.batchSize) return
      }
    }
    yield* completeCursorBatches(cursorPages(plan.from, plan.cursorColumn, plan.cursor, config.batchSize, read), ctx, toRecord)
  } finally {
    await db.close()
  }
}

// --- Internal helpers ---

/**
 * Pages ordered by the cursor column: `col >= last ORDER BY col LIMIT n OFFSET k`, where `k` counts
 * the rows of the last value already returned, so ties across a page boundary are neither skipped
 * nor repeated. Rows whose cursor column is NULL have no place in that order and are not read.
 */
async function* cursorPages(
  from: string,
  column: string,
  start: string | number | null | undefined,
  size: number,
  read: (sql: string, args: SqlValue[]) => Promise<{ rows: Row[] }>,
): AsyncIterable<Row[]> {
  const select = `SELECT *, ${column} AS "${CURSOR_ALIAS}" FROM ${from}`
  const first = start === undefined || start === null
  let { rows } = await read(
    first
      ? `${select} WHERE ${column} IS NOT NULL ORDER BY ${column} LIMIT ?`
      : `${select} WHERE ${column} > ? ORDER BY ${column} LIMIT ?`,
    first ? [size] : [start, size],
  )
  let last: unknown
  let seenOfLast = 0
  for (;;) {
    if (rows.length > 0) yield rows
    if (rows.length < size) return
    for (const row of rows) {
      if (row[CURSOR_ALIAS] === last) seenOfLast++
      else {
        last = row[CURSOR_ALIAS]
        seenOfLast = 1
      }
    }
    ;({ rows } = await read(`${select} WHERE ${column} >= ? ORDER BY ${column} LIMIT ? OFFSET ?`, [
      last as SqlValue,
      size,
      seenOfLast,
    ]))
  }
}

async function primaryKey(query: SqlReader['query'], table: string): Promise<string[]> {
  const { rows } = await query(`PRAGMA table_info(${quoteIdent(table)})`)
  if (rows.length === 0) throw new ConnectorError(`Table ${table} does not exist`)
  return rows
    .filter((r) => Number(r.pk) > 0)
    .sort((a, b) => Number(a.pk) - Number(b.pk))
    .map((r) => String(r.name))
}

/** A query bounded by the statement limit (config `timeout`) and by `signal`: neither waits for a slow server. */
function withLimits<T>(work: Promise<T>, ms: number, signal: AbortSignal, where: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let onAbort: (() => void) | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConnectorError(`Reading ${where} took longer than ${ms} ms (config.timeout)`)), ms)
    onAbort = () => reject(stoppedRead())
    signal.addEventListener('abort', onAbort, { once: true })
  })
  return Promise.race([work, limit]).finally(() => {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort!)
  })
}
