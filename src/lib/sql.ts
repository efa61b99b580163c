/**
 * SQL helpers of the `database` connector: the runtime primitive that opens SQLite/libSQL
 * databases, and pure checks of SQL text (identifier quoting, the read-only single SELECT rule).
 */

/** A value bound to a `?` / `$n` parameter. */
export type SqlValue = string | number | boolean | null

/** Rows as plain objects (column name → JSON-safe value) and the column names in order. */
export interface SqlResult {
  columns: string[]
  rows: Record<string, unknown>[]
}

/** A read-only connection to an SQLite/libSQL database. */
export interface SqlReader {
  /** Runs one read-only statement; integers beyond 2^53 come back as strings, blobs as base64. */
  query(sql: string, args?: SqlValue[]): Promise<SqlResult>
  close(): void | Promise<void>
}

/**
 * Opens an SQLite/libSQL database read-only: a file `path` relative to FILES_DIR (symlinks
 * followed, never leaving it), or a remote `url` (`libsql://`, `https://`) with its `authToken`.
 * Throws FileAccessError for a refused path; other failures as they come (the caller words them).
 */
export type OpenSqlite = (target: { path?: string; url?: string; authToken?: string }) => Promise<SqlReader>

/** Double-quotes an identifier (`"a""b"`), safe for any name without NUL. */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

/** Why a configured identifier (schema, table, column) is refused, or undefined. */
export function identifierProblem(name: string): string | undefined {
  if (name.trim() === '') return 'must not be empty'
  if (name.length > 128) return 'must be at most 128 characters'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f]/.test(name)) return 'must not contain control characters'
  return undefined
}

/** Words that change data or state; refused outside literals, quoted names and comments. */
const WRITE_WORDS = [
  'insert',
  'update',
  'delete',
  'merge',
  'upsert',
  'into',
  'create',
  'alter',
  'drop',
  'truncate',
  'rename',
  'grant',
  'revoke',
  'copy',
  'call',
  'do',
  'execute',
  'attach',
  'detach',
  'pragma',
  'vacuum',
  'reindex',
  'analyze',
  'lock',
  'set',
  'reset',
  'begin',
  'commit',
  'rollback',
  'savepoint',
  'release',
  'prepare',
  'deallocate',
  'listen',
  'notify',
]
const WRITE_PATTERN = new RegExp(`\\b(${WRITE_WORDS.join('|')})\\b`, 'i')

/**
 * Why `query` is not one read-only SELECT (DATA-ENGINE: a database `query` must be one read-only
 * SELECT), or undefined. String literals, quoted identifiers and comments are blanked first; what
 * remains must start with SELECT or WITH, hold no `;` except one at the end, and no word that
 * writes or changes state (INSERT, UPDATE, DELETE, DROP, INTO, …). The query still runs in a
 * read-only transaction: this check gives a clear 400, the driver enforces.
 */
export function readOnlyQueryProblem(query: string): string | undefined {
  const code = blankLiterals(query)
  if (code === undefined) return 'has an unterminated string, quoted name or comment'
  const body = code.trim().replace(/;\s*$/, '')
  if (body === '') return 'must not be empty'
  if (body.includes(';')) return 'must be a single statement (no ";" between statements)'
  if (!/^\(*\s*(select|with)\b/i.test(body)) return 'must be a SELECT (or WITH … SELECT) statement'
  const word = WRITE_PATTERN.exec(body)?.[1]
  if (word) {
    return `must be read-only: '${word.toUpperCase()}' is not allowed (double-quote a column of that name)`
  }
  return undefined
}

/**
 * The query with the contents of '…', E'…', $tag$…$tag$, "…", `…`, […] and comments replaced by
 * spaces (lengths kept); undefined when one is not closed.
 */
function blankLiterals(query: string): string | undefined {
  let out = ''
  let i = 0
  const n = query.length
  while (i < n) {
    const ch = query[i]
    const next = query[i + 1]
    let end = -1
    if (ch === '-' && next === '-') {
      end = query.indexOf('\n', i)
      if (end === -1) end = n
    } else if (ch === '/' && next === '*') {
      end = blockCommentEnd(query, i)
    } else if (ch === "'" || ch === '"' || ch === '`') {
      end = quotedEnd(query, i, ch, ch === "'" && /e/i.test(query[i - 1] ?? '') && !/\w/.test(query[i - 2] ?? ''))
    } else if (ch === '[') {
      end = query.indexOf(']', i + 1)
      end = end === -1 ? -1 : end + 1
    } else if (ch === '$') {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(query.slice(i))?.[0]
      if (tag && !/\w/.test(query[i - 1] ?? '')) {
        const close = query.indexOf(tag, i + tag.length)
        end = close === -1 ? -1 : close + tag.length
      } else {
        out += ch
        i++
        continue
      }
    } else {
      out += ch
      i++
      continue
    }
    if (end === -1) return undefined
    out += ' '.repeat(end - i)
    i = end
  }
  return out
}

function blockCommentEnd(text: string, start: number): number {
  let depth = 0
  for (let i = start; i < text.length - 1; i++) {
    if (text[i] === '/' && text[i + 1] === '*') {
      depth++
      i++
    } else if (text[i] === '*' && text[i + 1] === '/') {
      depth--
      i++
      if (depth === 0) return i + 1
    }
  }
  return -1
}

function quotedEnd(text: string, start: number, quote: string, backslashEscapes: boolean): number {
  for (let i = start + 1; i < text.length; i++) {
    if (backslashEscapes && text[i] === '\\') {
      i++
    } else if (text[i] === quote) {
      if (text[i + 1] === quote) i++
      else return i + 1
    }
  }
  return -1
}
