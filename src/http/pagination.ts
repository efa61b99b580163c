import type { AppContext } from './context.ts'
import { setResponseHeader } from './response-headers.ts'

/** `X-Total-Count` and an RFC 8288 `Link` header (first, prev, next, last) for a paged list. */
export function paginationHeaders(c: AppContext, p: { total: number; page: number; limit: number }) {
  const pages = Math.max(1, Math.ceil(p.total / p.limit))
  const url = new URL(c.req.url)
  const at = (page: number) => {
    url.searchParams.set('page', String(page))
    url.searchParams.set('limit', String(p.limit))
    return `<${url.pathname}${url.search}>`
  }
  const links = [`${at(1)}; rel="first"`]
  if (p.page > 1) links.push(`${at(Math.min(p.page - 1, pages))}; rel="prev"`)
  if (p.page < pages) links.push(`${at(p.page + 1)}; rel="next"`)
  links.push(`${at(pages)}; rel="last"`)
  setResponseHeader(c, 'X-Total-Count', String(p.total))
  setResponseHeader(c, 'Link', links.join(', '))
}
