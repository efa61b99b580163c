import type { ListedPage } from '../lib/paging.ts'
import type { AppContext } from './context.ts'
import { setResponseHeader } from './response-headers.ts'

/**
 * `X-Total-Count` and an RFC 8288 `Link` header (first, prev, next, last) for a list. A paged list
 * links its pages by `page` and `limit`; an unpaged one (the whole list as one page) has only
 * first and last, both the request itself, since a `limit` of the total could exceed the cap.
 */
export function paginationHeaders(c: AppContext, p: ListedPage) {
  const url = new URL(c.req.url)
  const limit = p.limit
  const pages = limit === undefined ? 1 : Math.max(1, Math.ceil(p.total / limit))
  const at = (page: number) => {
    if (limit !== undefined) {
      url.searchParams.set('page', String(page))
      url.searchParams.set('limit', String(limit))
    }
    return `<${url.pathname}${url.search}>`
  }
  const links = [`${at(1)}; rel="first"`]
  if (p.page > 1) links.push(`${at(Math.min(p.page - 1, pages))}; rel="prev"`)
  if (p.page < pages) links.push(`${at(p.page + 1)}; rel="next"`)
  links.push(`${at(pages)}; rel="last"`)
  setResponseHeader(c, 'X-Total-Count', String(p.total))
  setResponseHeader(c, 'Link', links.join(', '))
}
