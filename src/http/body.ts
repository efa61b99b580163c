import { AppError, tooLarge } from '../errors.ts'
import { readTextLimited } from '../lib/streams.ts'
import type { AppContext } from './context.ts'

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
export const MAX_JSON_BODY = 1024 * 1024

/**
 * JSON bodies of /api writes (CONTRACT: General): over 1 MiB → 413, a body of a non-JSON media type
 * → 415, malformed JSON → 400 INVALID_JSON. The checked text is left in Hono's body cache for the
 * route's validator. An empty body is no body, whatever its Content-Type says: an optional body
 * reads as `{}`, a required one fails validation naming its fields (400), never a 415.
 * Reads (GET, HEAD, OPTIONS) return undefined: nothing to wait for.
 */
export function readJsonBody(c: AppContext): Promise<void> | undefined {
  if (!WRITE_METHODS.has(c.req.method)) return undefined
  return checkJsonBody(c)
}

async function checkJsonBody(c: AppContext) {
  const length = c.req.header('content-length')
  if (length !== undefined && Number(length) > MAX_JSON_BODY) throw tooLarge(`JSON bodies are limited to ${MAX_JSON_BODY} bytes`)
  // With a Content-Length (already checked above) the HTTP parser bounds the body, so it is read
  // in one call (@hono/node-server's fast path, no stream); without one it is streamed with the cap.
  const raw =
    length !== undefined
      ? await c.req.raw.text()
      : c.req.raw.body
        ? await readTextLimited(c.req.raw.body, MAX_JSON_BODY, () =>
            tooLarge(`JSON bodies are limited to ${MAX_JSON_BODY} bytes`),
          )
        : ''
  const contentType = c.req.header('content-type')
  const mediaType = contentType?.split(';')[0].trim() ?? ''
  if (raw.trim() === '') {
    c.req.raw = withoutBody(c.req.raw)
    return
  }
  if (!JSON_TYPE.test(mediaType)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Expected Content-Type application/json, got ${mediaType || 'none'}`)
  }
  try {
    JSON.parse(raw)
  } catch {
    throw new AppError('INVALID_JSON', 'The request body is not valid JSON')
  }
  c.req.bodyCache.text = Promise.resolve(raw) as never
}

/**
 * The request as if it had come without a body. The routes' media-type gate (@hono/zod-openapi)
 * answers 415 for any Content-Type a route does not declare and, with none, for a body it still
 * finds on the request (a Node request always carries a stream, empty or not, and the text read
 * above stays visible to it), so an empty body must leave neither behind.
 */
function withoutBody(req: Request): Request {
  const headers = new Headers(req.headers)
  headers.delete('content-type')
  headers.delete('content-length')
  headers.delete('transfer-encoding')
  return new Request(req.url, { method: req.method, headers, signal: req.signal })
}
