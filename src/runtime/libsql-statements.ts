import { createRequire } from 'node:module'

/**
 * Prepared statements kept per connection for the local libSQL client (docs/performance.md
 * "Claims"). `@libsql/client` prepares every statement it runs anew — parsing and planning the
 * same few dozen SQL texts on every request — and asks each one whether it returns rows by letting
 * `raw()` throw, and for its columns twice: with the garbage they made, half of a claim's CPU. Its connections are objects of the `libsql`
 * package's `Database`, which it makes itself, so the cache sits on that class: `prepare` answers
 * the statement it prepared before for the same text on the same connection (least recently used
 * ones dropped beyond `MAX_STATEMENTS`), and a statement that returned no rows once refuses `raw()`
 * again without asking the native side.
 *
 * Reusing a statement is safe where the client uses them: each run binds its own arguments and
 * steps to the end (`all`, `run`) before the next one starts, so no statement stays open holding a
 * read lock or a half-read result. SQLite prepares a statement again by itself when the schema
 * changed, but a cached statement whose result columns come from `*` would report its old columns
 * once after another connection altered a table, so texts with a `*` (other than `count(*)`) are
 * never cached; the others name their result columns, which are then asked of the native side once.
 */

/** Statements kept per connection: the service runs a few hundred distinct texts; the rest are one-offs. */
export const MAX_STATEMENTS = 500

interface Statement {
  raw(toggle?: boolean): Statement
  columns(): unknown[]
}

interface DatabaseClass {
  prototype: {
    prepare(sql: string): Statement
    close(): void
  }
}

const CACHE = Symbol('statements')
const INSTALLED = Symbol('statement cache installed')

type Connection = DatabaseClass['prototype'] & { [CACHE]?: Map<string, Statement> }

/**
 * Installs the cache on the `libsql` module `@libsql/client` loads (once per process). Answers
 * whether it is in place: false when that module cannot be found or does not look as expected,
 * and the client then prepares each statement as before.
 */
export function cacheLibsqlStatements(): boolean {
  const path = libsqlModulePath()
  if (!path) return false
  let Database: DatabaseClass
  try {
    Database = createRequire(import.meta.url)(path) as DatabaseClass
  } catch {
    return false
  }
  return installStatementCache(Database)
}

/**
 * Where the `libsql` module `@libsql/client` imports is (it is the client's dependency, not ours):
 * the copy whose connections the client makes. Undefined when it cannot be found.
 */
export function libsqlModulePath(): string | undefined {
  try {
    const client = createRequire(import.meta.url).resolve('@libsql/client')
    return createRequire(client).resolve('libsql')
  } catch {
    return undefined
  }
}

/** The cache on `Database`'s connections (exported for tests). */
export function installStatementCache(Database: DatabaseClass): boolean {
  const proto = Database?.prototype as (Connection & { [INSTALLED]?: boolean }) | undefined
  if (!proto || typeof proto.prepare !== 'function' || typeof proto.close !== 'function') return false
  if (proto[INSTALLED]) return true
  const prepare = proto.prepare
  const close = proto.close
  proto.prepare = function (this: Connection, sql: string): Statement {
    let cache = this[CACHE]
    if (!cache) {
      cache = new Map()
      this[CACHE] = cache
    }
    const known = cache.get(sql)
    if (known) {
      // Most recently used last.
      cache.delete(sql)
      cache.set(sql, known)
      return known
    }
    if (!cacheable(sql)) return prepare.call(this, sql)
    const statement = asksOnce(prepare.call(this, sql))
    cache.set(sql, statement)
    if (cache.size > MAX_STATEMENTS) cache.delete(cache.keys().next().value as string)
    return statement
  }
  proto.close = function (this: Connection) {
    this[CACHE]?.clear()
    return close.call(this)
  }
  proto[INSTALLED] = true
  return true
}

// --- Internal helpers ---

/** A text whose result columns are written out (a `*` other than `count(*)` is not cached). */
const cacheable = (sql: string) => !sql.replaceAll('(*)', '').includes('*')

/**
 * The statement, with what does not change between its runs asked of the native side once: `raw()`
 * until it once refuses (a statement that returns no rows; from then on it refuses with that same
 * error at once), and its result columns (named in the text: no `*`, see `cacheable`).
 */
function asksOnce(statement: Statement): Statement {
  const columns = statement.columns
  let known: unknown[] | undefined
  statement.columns = function (this: Statement) {
    known ??= columns.call(this)
    return known
  }
  const raw = statement.raw
  statement.raw = function (this: Statement, toggle?: boolean) {
    try {
      return raw.call(this, toggle)
    } catch (err) {
      statement.raw = () => {
        throw err
      }
      throw err
    }
  }
  return statement
}
