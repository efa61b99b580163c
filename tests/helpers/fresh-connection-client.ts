import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type Client,
  createClient,
  type InArgs,
  type InStatement,
  LibsqlError,
  type Transaction,
  type TransactionMode,
} from '@libsql/client'

/**
 * A libSQL client with the remote protocol's worst case for connection state (docs/runtimes.md
 * "Connection state"): every call opens its own connection to one database file and closes it
 * afterwards. `batch` and `migrate` are one connection each (one request over HTTP), a
 * `transaction` keeps its connection until it settles (one stream), and nothing else is shared: a
 * PRAGMA, `last_insert_rowid()` or `changes()` outside a batch is lost with its connection.
 *
 * Every connection starts with `PRAGMA foreign_keys = OFF`, SQLite's own default. The native libSQL
 * build turns foreign keys on by default, which would hide a delete that leans on `ON DELETE
 * CASCADE`; a remote server's fresh stream is not bound to, so the worst case is off.
 *
 * The file lives in a temporary folder (tmpfs when there is one) removed by `close()`. Apps a test
 * never closes are removed when the test process exits, and, since vitest may end its worker
 * processes without an `exit` event, by the next process that finds the folder of a dead one.
 */
export function freshConnectionClient(): Client {
  const dir = mkdtempSync(join(processFolder(), 'db-'))
  const url = `file:${join(dir, 'panels.db')}`
  let closed = false

  const open = async () => {
    if (closed) throw new LibsqlError('The client is closed', 'CLIENT_CLOSED')
    const connection = createClient({ url, concurrency: 1 })
    await connection.execute('PRAGMA foreign_keys = OFF')
    return connection
  }
  /** Runs `work` on a connection of its own, closed when it settles. */
  const once = async <T>(work: (connection: Client) => Promise<T>): Promise<T> => {
    const connection = await open()
    try {
      return await work(connection)
    } finally {
      connection.close()
    }
  }

  const client: Client = {
    execute: ((stmt: InStatement | string, args?: InArgs) =>
      once((c) => (typeof stmt === 'string' ? c.execute(stmt, args) : c.execute(stmt)))) as Client['execute'],
    batch: (stmts, mode) => once((c) => c.batch(stmts, mode)),
    migrate: (stmts) => once((c) => c.migrate(stmts)),
    executeMultiple: (sql) => once((c) => c.executeMultiple(sql)),
    sync: () => once((c) => c.sync()),
    transaction: (async (mode?: TransactionMode) => {
      const connection = await open()
      try {
        return ownedTransaction(await connection.transaction(mode), connection)
      } catch (err) {
        connection.close()
        throw err
      }
    }) as Client['transaction'],
    close() {
      closed = true
      rmSync(dir, { recursive: true, force: true })
    },
    reconnect() {},
    get closed() {
      return closed
    },
    protocol: 'file',
  }
  return client
}

// --- Internal helpers ---

const PREFIX = 'panels-fresh-'
let ownFolder: string | undefined

/** This process's folder of databases; made on first use, after removing those of dead processes. */
function processFolder(): string {
  if (ownFolder) return ownFolder
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir()
  for (const name of readdirSync(base)) {
    const pid = Number(name.slice(PREFIX.length))
    if (name.startsWith(PREFIX) && Number.isInteger(pid) && !alive(pid))
      rmSync(join(base, name), { recursive: true, force: true })
  }
  const folder = join(base, `${PREFIX}${process.pid}`)
  mkdirSync(folder, { recursive: true })
  process.once('exit', () => rmSync(folder, { recursive: true, force: true }))
  ownFolder = folder
  return folder
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** A transaction that closes its own connection when it commits, rolls back or is closed. */
function ownedTransaction(tx: Transaction, connection: Client): Transaction {
  const settle = <T>(result: Promise<T>) => result.finally(() => connection.close())
  return {
    execute: (stmt: InStatement) => tx.execute(stmt),
    batch: (stmts: InStatement[]) => tx.batch(stmts),
    executeMultiple: (sql: string) => tx.executeMultiple(sql),
    commit: () => settle(tx.commit()),
    rollback: () => settle(tx.rollback()),
    close() {
      tx.close()
      connection.close()
    },
    get closed() {
      return tx.closed
    },
  } as Transaction
}
