import type { ServiceContext } from '../../context.ts'
import { type FieldIssue, invalid, notFound } from '../../errors.ts'
import type { GroupSearch } from './group.search.ts'
import { MEMBER_INLINE_CAP, PAGE_COUNT_DEFAULT, searchGroups } from './group.service.ts'

/**
 * What the Group routes read from a request (the Group id, `$getpage`'s offset and count) and the
 * search's answer, a `searchset` Bundle with `total` and its self/next/previous links (docs/fhir.md
 * "Patient lists").
 */

const ID = /^[1-9]\d{0,15}$/

/** The view id of a Group id; anything that is not one is a Group that does not exist (404). */
export function viewIdOf(ctx: ServiceContext, id: string): number {
  if (!ID.test(id)) throw notFound('View', id, ctx.scope.tenantId)
  return Number(id)
}

/** `offset` and `count` of a `$getpage` (query pairs or a Parameters body's, as pairs); a 400 naming each bad one. */
export function pageParams(pairs: [string, string][]): { offset: number; count: number } {
  const issues: FieldIssue[] = []
  let offset = 0
  let count = PAGE_COUNT_DEFAULT
  for (const [name, value] of pairs) {
    if (name !== 'offset' && name !== 'count') continue
    const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN
    if (name === 'offset') {
      if (Number.isNaN(n)) issues.push({ path: 'offset', message: `must be a whole number of 0 or more, got "${value}"` })
      else offset = n
    } else if (Number.isNaN(n) || n < 1 || n > MEMBER_INLINE_CAP) {
      issues.push({ path: 'count', message: `must be a whole number from 1 to ${MEMBER_INLINE_CAP}, got "${value}"` })
    } else count = n
  }
  if (issues.length > 0) {
    throw invalid(issues, `Invalid $getpage parameters: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
  return { offset, count }
}

/** The search's answer: a searchset Bundle of one page of Groups, `total` counting every match. */
export async function groupSearchBundle(ctx: ServiceContext, search: GroupSearch, base: string) {
  const { total, groups } = await searchGroups(ctx, search)
  const at = (offset: number) => {
    const q = new URLSearchParams(search.applied)
    if (!search.countOnly) {
      q.set('_count', String(search.count))
      q.set('_offset', String(offset))
    }
    return `${base}/Group?${q.toString()}`
  }
  const link = [{ relation: 'self', url: at(search.offset) }]
  if (!search.countOnly && search.count > 0) {
    if (search.offset + search.count < total) link.push({ relation: 'next', url: at(search.offset + search.count) })
    if (search.offset > 0) link.push({ relation: 'previous', url: at(Math.max(0, search.offset - search.count)) })
  }
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    timestamp: ctx.clock.now().toISOString(),
    total,
    link,
    ...(groups.length > 0
      ? { entry: groups.map((g) => ({ fullUrl: `${base}/Group/${g.id}`, resource: g, search: { mode: 'match' } })) }
      : {}),
  }
}
