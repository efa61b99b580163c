import { createServer, type Socket } from 'node:net'
import type { FileStore } from '../../src/lib/files.ts'
import type { OpenSqlite } from '../../src/lib/sql.ts'
import { type FixtureServer, sendJson, startJsonServer } from './servers.ts'

/**
 * Sources that never finish or that misbehave, for the connector contract: a read against them
 * ends only through the signal, and their errors quote what they were sent.
 */

/** A TCP server on 127.0.0.1 that accepts connections and never says a word (a database that hangs). */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createServer((s) => {
    sockets.add(s)
    s.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A loopback port nothing listens on (connections are refused). */
export async function closedPort(): Promise<number> {
  const server = await startSilentServer()
  await server.close()
  return server.port
}

/**
 * An HTTP server on 127.0.0.1: `/hang/…` is never answered (until the server closes);
 * `/echo-auth/…` answers 401 with an OperationOutcome quoting the request's Authorization header.
 */
export function startMisbehavingHttp(): Promise<FixtureServer> {
  return startJsonServer((req, res) => {
    if (req.url?.startsWith('/echo-auth')) {
      return sendJson(res, 401, {
        resourceType: 'OperationOutcome',
        issue: [{ severity: 'error', code: 'login', diagnostics: `credentials ${req.headers.authorization} refused` }],
      })
    }
  })
}

/** A file store on a slow drive: every file grows one CSV row every 50 ms and never ends. */
export const slowFileStore = (): FileStore => ({
  stat: async () => ({ size: 1_000_000 }),
  async read() {
    let row = 0
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        controller.enqueue(new TextEncoder().encode(row++ === 0 ? 'id,name\n' : `${row},slow\n`))
      },
    })
  },
  write: () => Promise.reject(new Error('read-only')),
  remove: () => Promise.reject(new Error('read-only')),
})

/** An SQLite opener whose queries never come back (a remote libSQL server that hangs). */
export const hangingSqlite =
  (open: OpenSqlite): OpenSqlite =>
  async (target) => {
    const db = await open(target)
    return { query: () => new Promise(() => {}), close: () => db.close() }
  }
