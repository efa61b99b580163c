import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Handler = (req: IncomingMessage & { body: string }, res: ServerResponse) => void | Promise<void>

export interface FixtureServer {
  url: string
  /** Every request received, in order (method, url, headers, body). */
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[]
  close(): Promise<void>
}

/**
 * A loopback HTTP fixture on 127.0.0.1 and a free port. The handler sees the request with its
 * body read; close it in afterAll (open connections are dropped).
 */
export async function startJsonServer(handler: Handler): Promise<FixtureServer> {
  const requests: FixtureServer['requests'] = []
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    requests.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body })
    try {
      await handler(Object.assign(req, { body }), res)
    } catch (err) {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(err))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** Answers JSON with a status. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
