import { connect, createServer, type Server, type Socket } from 'node:net'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

/** A PostgreSQL-protocol server on 127.0.0.1 backed by PGlite (one connection at a time). */
export interface PgServer {
  db: PGlite
  port: number
  /** `postgres://user:password@127.0.0.1:port/postgres` */
  url(user?: string, password?: string): string
  close(): Promise<void>
}

export async function startPgServer(setupSql = ''): Promise<PgServer> {
  const db = await PGlite.create()
  if (setupSql) await db.exec(setupSql)
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 })
  await server.start()
  const port = Number(server.getServerConn().split(':').at(-1))
  return {
    db,
    port,
    url: (user = 'postgres', password = 'pw') => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    async close() {
      await server.stop()
      await db.close()
    },
  }
}

/**
 * A password gate in front of a PostgreSQL-protocol server (PGlite trusts every client): it asks
 * the client for a cleartext password (AuthenticationCleartextPassword), answers a wrong one with
 * the ErrorResponse PostgreSQL sends (28P01), and for the right one replays the startup message to
 * `upstreamPort` and joins the two sockets.
 */
export async function startPasswordGate(
  upstreamPort: number,
  password: string,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    client.on('error', () => {})
    let buffer = Buffer.alloc(0)
    let startup: Buffer | undefined
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      if (!startup) {
        if (buffer.length < 8) return
        const length = buffer.readInt32BE(0)
        if (buffer.length < length) return
        const code = buffer.readInt32BE(4)
        if (code === 80877103) {
          // SSLRequest: not supported here.
          buffer = buffer.subarray(8)
          client.write('N')
          return
        }
        startup = buffer.subarray(0, length)
        buffer = buffer.subarray(length)
        client.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]))
      }
      if (buffer.length < 5 || buffer[0] !== 0x70) return
      const length = buffer.readInt32BE(1)
      if (buffer.length < length + 1) return
      const given = buffer.subarray(5, length).toString('utf8').replace(/\0$/, '')
      client.off('data', onData)
      if (given !== password) {
        const fields = Buffer.from('SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user "reader"\0\0', 'utf8')
        const head = Buffer.alloc(5)
        head[0] = 0x45
        head.writeInt32BE(fields.length + 4, 1)
        client.end(Buffer.concat([head, fields]))
        return
      }
      const upstream = connect(upstreamPort, '127.0.0.1', () => {
        upstream.write(startup!)
        upstream.pipe(client)
        client.pipe(upstream)
      })
      sockets.add(upstream)
      upstream.on('close', () => {
        sockets.delete(upstream)
        client.destroy()
      })
      upstream.on('error', () => client.destroy())
    }
    client.on('data', onData)
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
