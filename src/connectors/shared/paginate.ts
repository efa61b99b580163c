import { z } from 'zod'
import { evaluatePath, isValidPath } from '../../lib/formats/json-path.ts'
import { type ConnectorContext, ConnectorError } from '../types.ts'
import { maxPagesField } from './http-config.ts'

export const DEFAULT_PAGE_SIZE = 100
export const MAX_PAGE_SIZE = 10_000
/** Where a cursor is looked for in a response body when no `cursorPath` is set, in this order. */
export const CURSOR_FIELDS = ['next', 'nextCursor', 'cursor', 'links.next', 'meta.next_cursor'] as const

const paramName = z.string().trim().min(1).max(100)

/** Paging fields of an `api` source (DATA-ENGINE: Connector conventions, Paging). */
export const pagingFields = {
  paginationStyle: z.enum(['offset', 'cursor', 'page']).optional(),
  pageSize: z.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
  maxPages: maxPagesField,
  offsetParam: paramName.optional(),
  limitParam: paramName.optional(),
  pageParam: paramName.optional(),
  pageSizeParam: paramName.optional(),
  cursorParam: paramName.optional(),
  cursorPath: z.string().refine(isValidPath, 'must be a path like $.meta.next or links.next').optional(),
}

const PagingConfig = z.object(pagingFields)
export type PagingConfig = z.infer<typeof PagingConfig>

/** One page as loaded by a connector: its records in batches, and where the next cursor may be. */
export interface LoadedPage<T> {
  batches: AsyncIterable<T[]> | Iterable<T[]>
  /** The parsed body, when there is one to look for a cursor in. */
  doc?: unknown
  headers: Headers
}

/**
 * Reads `endpoint` page by page (DATA-ENGINE: Paging). `offset`: `offset`/`limit`; `page`:
 * 1-based `page`/`pageSize`; both stop at an empty or short page. `cursor`: the next cursor from
 * `cursorPath`, else the first of CURSOR_FIELDS, else a `Link: rel="next"` header; an absolute
 * URL is followed (same origin only), any other value is sent as `cursor`; stops when none is
 * given or a page is empty. Without a style, one request. At `maxPages` the read stops, and
 * `ctx.truncated` is told only when there was more to read.
 */
export async function* paginate<T>(
  endpoint: string,
  config: PagingConfig,
  ctx: ConnectorContext,
  load: (url: URL, page: number) => Promise<LoadedPage<T>>,
): AsyncGenerator<T[]> {
  const style = config.paginationStyle
  const pageSize = config.pageSize ?? DEFAULT_PAGE_SIZE
  const origin = new URL(endpoint).origin
  const seenCursors = new Set<string>()
  let url = firstUrl(endpoint, config, pageSize)
  let total = 0
  for (let page = 1; ; page++) {
    const loaded = await load(url, page)
    let count = 0
    for await (const batch of loaded.batches) {
      count += batch.length
      if (batch.length > 0) yield batch
    }
    total += count
    if (!style) return
    let next: URL | undefined
    if (style === 'cursor') {
      const cursor = count === 0 ? undefined : nextCursor(loaded, config, url)
      if (cursor !== undefined) {
        next = cursorUrl(cursor, endpoint, origin, config, pageSize)
        if (seenCursors.has(next.href)) {
          throw new ConnectorError(`The API returned the same next cursor twice (page ${page}); paging stopped`)
        }
        seenCursors.add(next.href)
      }
    } else if (count >= pageSize) {
      next = new URL(endpoint)
      if (style === 'offset') {
        next.searchParams.set(config.offsetParam ?? 'offset', String(total))
        next.searchParams.set(config.limitParam ?? 'limit', String(pageSize))
      } else {
        next.searchParams.set(config.pageParam ?? 'page', String(page + 1))
        next.searchParams.set(config.pageSizeParam ?? 'pageSize', String(pageSize))
      }
    }
    if (!next) return
    if (config.maxPages !== undefined && page >= config.maxPages) {
      ctx.truncated(`Stopped at maxPages (${config.maxPages} pages); the API had more pages`)
      return
    }
    url = next
  }
}

/** The `rel="next"` target of a Link header, resolved against the request URL. */
export function linkNext(header: string | null, base: URL): string | undefined {
  if (!header) return undefined
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part)
    if (!m) continue
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(m[2])
    const rels = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/)
    if (rels.includes('next')) return new URL(m[1], base).href
  }
  return undefined
}

// --- Internal helpers ---

function firstUrl(endpoint: string, config: PagingConfig, pageSize: number): URL {
  const url = new URL(endpoint)
  if (config.paginationStyle === 'offset') {
    url.searchParams.set(config.offsetParam ?? 'offset', '0')
    url.searchParams.set(config.limitParam ?? 'limit', String(pageSize))
  } else if (config.paginationStyle === 'page') {
    url.searchParams.set(config.pageParam ?? 'page', '1')
    url.searchParams.set(config.pageSizeParam ?? 'pageSize', String(pageSize))
  } else if (config.paginationStyle === 'cursor' && config.pageSize !== undefined) {
    url.searchParams.set(config.limitParam ?? 'limit', String(pageSize))
  }
  return url
}

const present = (v: unknown): v is string | number =>
  (typeof v === 'string' && v.trim() !== '') || (typeof v === 'number' && Number.isFinite(v))

function nextCursor(page: LoadedPage<unknown>, config: PagingConfig, url: URL): string | undefined {
  if (page.doc !== undefined && page.doc !== null && typeof page.doc === 'object') {
    const paths = config.cursorPath ? [config.cursorPath] : CURSOR_FIELDS
    for (const path of paths) {
      const value = evaluatePath(page.doc, path)
      if (present(value)) return String(value)
      if (config.cursorPath) return undefined
    }
  }
  return linkNext(page.headers.get('link'), url)
}

function cursorUrl(cursor: string, endpoint: string, origin: string, config: PagingConfig, pageSize: number): URL {
  if (/^https?:\/\//i.test(cursor)) {
    const url = new URL(cursor)
    if (url.origin !== origin) {
      throw new ConnectorError(`The API's next page link points to another origin (${url.origin}); only ${origin} is followed`)
    }
    return url
  }
  const url = firstUrl(endpoint, { ...config, paginationStyle: 'cursor' }, pageSize)
  url.searchParams.set(config.cursorParam ?? 'cursor', cursor)
  return url
}
