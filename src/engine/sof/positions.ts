import type { Step } from './paths.ts'

/**
 * Where the elements a `forEach`/`forEachOrNull`/`repeat` unnests sit in the JSON, relative to the
 * element they were unnested from: `name[1]`, `contact[0].name` (a single member has no index),
 * `given[0]`. A panel defined by a view keys each row by these positions (docs/sql-on-fhir.md,
 * "Panels defined by a ViewDefinition"), so a row keeps its key across syncs as long as its element
 * keeps its place. Array indexes are the JSON's own (null entries count).
 */

/** How deep an element is searched for a value the FHIRPath engine returned. */
const SEARCH_DEPTH = 12

/**
 * The positions of `items` (what `step` gave for `element`, in that order). A member step follows
 * the same navigation; any other path (`name.where(use = 'official')`) is located in the element:
 * an object by identity (the engine returns the JSON's own objects), a primitive by value, each
 * JSON place used once, in document order. A value the JSON does not hold (computed by a function)
 * is `(<path>)[i]`, its place in the result.
 */
export function positionsOf(step: Step, element: unknown, items: unknown[]): string[] {
  if (step.segments) {
    if (step.segments.length === 0) return items.map(() => '')
    return memberPositions(element, step.segments)
      .slice(0, items.length)
      .map((p) => p.at)
  }
  const places = jsonPlaces(element)
  const used = new Set<number>()
  return items.map((item, i) => {
    const found = places.findIndex((p, n) => !used.has(n) && p.value === item)
    if (found < 0) return `(${step.expression})[${i}]`
    used.add(found)
    return places[found].at
  })
}

/** `child` below `parent`: `name[1]` + `given[0]` = `name[1].given[0]`; `''` is the element itself. */
export const joinPosition = (parent: string, child: string): string =>
  parent === '' ? child : child === '' ? parent : `${parent}.${child}`

/**
 * A row's position: the positions of the elements it was unnested from, the deepest ones kept
 * (`name[1]` goes when `name[1].given[0]` is there), joined by `,` in select order; `''` for a row
 * of the resource itself.
 */
export function rowPosition(parts: string[]): string {
  const kept = parts.filter(
    (p, i) => p !== '' && !parts.some((q, j) => j !== i && q.startsWith(`${p}.`)) && parts.indexOf(p) === i,
  )
  return kept.join(',')
}

// --- Internal helpers ---

interface Place {
  value: unknown
  at: string
}

/** Member navigation as member-path.ts does it (lists flatten, nulls vanish), with each value's place. */
function memberPositions(element: unknown, segments: string[]): Place[] {
  let current: Place[] = [{ value: element, at: '' }]
  for (const segment of segments) {
    const next: Place[] = []
    for (const { value, at } of current) {
      if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segment)) continue
      const member = (value as Record<string, unknown>)[segment]
      const here = joinPosition(at, segment)
      if (Array.isArray(member)) {
        member.forEach((v, i) => {
          if (v !== null && v !== undefined) next.push({ value: v, at: `${here}[${i}]` })
        })
      } else if (member !== null && member !== undefined) next.push({ value: member, at: here })
    }
    current = next
  }
  return current
}

/** Every value below `element` with its place, in document order (depth first). */
function jsonPlaces(element: unknown): Place[] {
  const out: Place[] = []
  const visit = (value: unknown, at: string, depth: number) => {
    if (depth > SEARCH_DEPTH || typeof value !== 'object' || value === null) return
    for (const [key, member] of Object.entries(value)) {
      const here = joinPosition(at, key)
      if (Array.isArray(member)) {
        member.forEach((v, i) => {
          out.push({ value: v, at: `${here}[${i}]` })
          visit(v, `${here}[${i}]`, depth + 1)
        })
      } else {
        out.push({ value: member, at: here })
        visit(member, here, depth + 1)
      }
    }
  }
  visit(element, '', 0)
  return out
}
