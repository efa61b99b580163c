import type { ServerResponse } from 'node:http'
import { type FixtureServer, sendJson, startJsonServer } from './servers.ts'

/** The items every paged route serves: 250 of them, so pages of 100 are full, full, short. */
export const ITEMS = Array.from({ length: 250 }, (_, i) => ({ id: i + 1, name: `item ${i + 1}`, even: i % 2 === 1 }))

export interface PagedApiState {
  /** Tokens issued by /token, in order. */
  tokens: { token: string; expiresAt: number }[]
  /** expires_in (seconds) of the next tokens; undefined: none sent. */
  expiresIn: number | undefined
  /** Tokens /oauth/* no longer accepts. */
  revoked: Set<string>
  /** The server's clock (ms epoch); tests move it together with the connector's clock. */
  now: () => number
  /** Calls per key of the flaky routes. */
  calls: Map<string, number>
  /** Called when a page of /oauth/items is served (e.g. to move the clock half-way). */
  onOauthPage?: (page: number) => void
  /** Hanging requests, answered on close. */
  held: ServerResponse[]
}

const slice = (from: number, count: number) => ITEMS.slice(from, from + count)
const num = (v: string | null, fallback: number) => (v === null || v === '' ? fallback : Number(v))
const cursorOf = (offset: number) => (offset >= ITEMS.length ? null : `c-${offset}`)

function toXml(items: typeof ITEMS) {
  const rows = items.map((i) => `<item><id>${i.id}</id><name>${i.name}</name><even>${i.even}</even></item>`).join('')
  return `<?xml version="1.0" encoding="UTF-8"?><response><items>${rows}</items></response>`
}
const toCsv = (items: typeof ITEMS) => `id,name,even\n${items.map((i) => `${i.id},"${i.name}",${i.even}`).join('\n')}\n`

/**
 * A loopback HTTP API serving ITEMS in every paging style (offset, page, cursor in body fields or
 * a Link header, absolute next URLs), as JSON, XML or CSV, behind each kind of authentication,
 * plus an OAuth2 token endpoint that counts the tokens it issues and routes that fail on purpose.
 */
export async function startPagedApi() {
  const state: PagedApiState = {
    tokens: [],
    expiresIn: 3600,
    revoked: new Set(),
    now: () => Date.now(),
    calls: new Map(),
    held: [],
  }
  const bump = (key: string) => {
    const n = (state.calls.get(key) ?? 0) + 1
    state.calls.set(key, n)
    return n
  }
  const server: FixtureServer = await startJsonServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const q = url.searchParams
    const self = `http://127.0.0.1:${req.socket.localPort}`
    const offset = num(q.get('offset'), 0)
    const limit = num(q.get('limit'), 100)
    const page = num(q.get('page'), 1)
    const pageSize = num(q.get('pageSize'), 100)
    const byPage = slice((page - 1) * pageSize, pageSize)
    const cursorAt = Number((q.get('cursor') ?? 'c-0').slice(2))
    switch (url.pathname) {
      case '/offset':
        return sendJson(res, 200, { data: slice(offset, limit), total: ITEMS.length })
      case '/custom':
        return sendJson(res, 200, { rows: slice(num(q.get('skip'), 0), num(q.get('take'), 100)) })
      case '/page':
        return sendJson(res, 200, { items: byPage })
      case '/cursor':
        return sendJson(res, 200, { data: slice(cursorAt, limit), next: cursorOf(cursorAt + limit) })
      case '/cursor-meta':
        return sendJson(res, 200, { data: slice(cursorAt, 100), meta: { next_cursor: cursorOf(cursorAt + 100) } })
      case '/cursor-custom':
        return sendJson(res, 200, { data: slice(cursorAt, 100), paging: { after: cursorOf(cursorAt + 100) } })
      case '/cursor-url': {
        const next = cursorOf(cursorAt + 100)
        return sendJson(res, 200, { results: slice(cursorAt, 100), links: { next: next && `${self}/cursor-url?cursor=${next}` } })
      }
      case '/cursor-link': {
        const next = cursorOf(cursorAt + 100)
        const headers: Record<string, string> = next
          ? { link: `</cursor-link?cursor=${next}>; rel="next", </x>; rel="first"` }
          : {}
        return sendJson(res, 200, slice(cursorAt, 100), headers)
      }
      case '/cursor-elsewhere':
        return sendJson(res, 200, {
          data: slice(0, 100),
          next: `${self.replace('127.0.0.1', 'localhost')}/cursor-url?cursor=c-100`,
        })
      case '/cursor-stuck':
        return sendJson(res, 200, { data: slice(0, 100), next: 'c-0' })
      case '/xml':
        res.writeHead(200, { 'content-type': 'application/xml' })
        return void res.end(toXml(byPage))
      case '/csv':
        res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' })
        return void res.end(toCsv(byPage))
      case '/csv-semicolon':
        res.writeHead(200, { 'content-type': 'text/plain' })
        return void res.end('a;b\n1;x\n2;y\n')
      case '/echo':
        return sendJson(res, 200, [{ method: req.method, body: req.body, type: req.headers['content-type'] ?? null }])
      case '/bearer':
        return req.headers.authorization === 'Bearer tok-123'
          ? sendJson(res, 200, slice(0, 3))
          : sendJson(res, 401, { message: `bad credentials: ${req.headers.authorization}` })
      case '/basic':
        return req.headers.authorization === `Basic ${Buffer.from('ada:pässword').toString('base64')}`
          ? sendJson(res, 200, slice(0, 3))
          : sendJson(res, 401, { message: 'bad credentials' })
      case '/key':
        return req.headers[(q.get('header') ?? 'x-api-key').toLowerCase()] === 'key-1'
          ? sendJson(res, 200, slice(0, 3))
          : sendJson(res, 403, { message: 'no key' })
      case '/token':
        return issueToken(req.headers.authorization, req.body, q.get('post') === '1', res)
      case '/oauth/items': {
        const token = req.headers.authorization?.replace(/^Bearer /, '') ?? ''
        const issued = state.tokens.find((t) => t.token === token)
        if (!issued || state.revoked.has(token) || issued.expiresAt <= state.now()) {
          return sendJson(res, 401, { message: 'invalid or expired token' })
        }
        state.onOauthPage?.(page)
        return sendJson(res, 200, { items: byPage })
      }
      case '/flaky': {
        const n = bump(q.get('key') ?? '')
        const fails = num(q.get('fails'), 1)
        if (n > fails) return sendJson(res, 200, slice(0, 2))
        const status = num(q.get('status'), 503)
        const retryAfter = q.get('retryAfter')
        return sendJson(res, status, { message: `try later (${n})` }, retryAfter ? { 'retry-after': retryAfter } : {})
      }
      case '/hang': {
        bump('hang')
        if (page === 1) return sendJson(res, 200, { items: byPage })
        state.held.push(res)
        return
      }
      case '/not-found':
        return sendJson(res, 404, { message: 'no such thing here' })
      default:
        return sendJson(res, 404, { error: 'no such fixture' })
    }
  })

  function issueToken(authorization: string | undefined, body: string, viaBody: boolean, res: ServerResponse) {
    const form = new URLSearchParams(body)
    const clientOk = viaBody
      ? form.get('client_id') === 'cid' && form.get('client_secret') === 'csecret' && !authorization
      : authorization === `Basic ${btoa('cid:csecret')}`
    if (form.get('grant_type') !== 'client_credentials' || !clientOk) {
      return sendJson(res, 401, { error: 'invalid_client', error_description: `client authentication failed (${form})` })
    }
    const token = `tok-${state.tokens.length + 1}`
    const expiresIn = state.expiresIn
    state.tokens.push({ token, expiresAt: expiresIn === undefined ? Number.POSITIVE_INFINITY : state.now() + expiresIn * 1000 })
    return sendJson(res, 200, {
      access_token: token,
      token_type: 'Bearer',
      ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
    })
  }

  return {
    server,
    state,
    close: async () => {
      for (const res of state.held) res.destroy()
      await server.close()
    },
  }
}
