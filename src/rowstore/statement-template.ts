import { Param, SQL, StringChunk } from 'drizzle-orm'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'

/**
 * Statements built once and filled in many times. A writer's membership step is the same SQL for
 * every batch of a sync or a recompute but for a few values (the batch's scratch token, its time,
 * its event key); building it is a walk over a deep tree of SQL fragments per batch. A template is
 * the statements' texts with their parameters, where the values that vary are slots.
 *
 * A template is made by building the statements twice with two sets of marker values and
 * comparing: the texts must be equal and every parameter that differs must be a marker of the same
 * slot in both builds. Anything else (a value computed from a varying one, a `?` written into the
 * text) leaves no template, and the caller builds its statements as before.
 */

/** The statements of a template: texts split at their parameters, and what goes in each. */
export interface StatementTemplate<K extends string> {
  statements: { parts: string[]; params: ({ slot: K } | { value: unknown })[] }[]
}

/** Raw SQL only (no tables, no casing): the SQLite dialect's texts and parameters. */
const dialect = new SQLiteSyncDialect()

/**
 * The template of `build`, or undefined when its statements are not a template over `slots`:
 * `build` is called with each of `markers` (one marker text per slot, distinct across both sets).
 */
export function makeTemplate<K extends string>(
  build: (values: Record<K, string>) => readonly SQL[],
  markers: [Record<K, string>, Record<K, string>],
): StatementTemplate<K> | undefined {
  let a: { sql: string; params: unknown[] }[]
  let b: typeof a
  try {
    ;[a, b] = markers.map((m) => build(m).map((s) => dialect.sqlToQuery(s)))
  } catch {
    return undefined
  }
  if (a.length !== b.length) return undefined
  const slotOf = new Map<unknown, K>(Object.entries(markers[0]).map(([k, v]) => [v, k as K]))
  const statements: StatementTemplate<K>['statements'] = []
  for (let i = 0; i < a.length; i++) {
    const parts = a[i].sql.split('?')
    if (a[i].sql !== b[i].sql || parts.length !== a[i].params.length + 1) return undefined
    const params: ({ slot: K } | { value: unknown })[] = []
    for (let p = 0; p < a[i].params.length; p++) {
      const [x, y] = [a[i].params[p], b[i].params[p]]
      const slot = slotOf.get(x)
      if (slot !== undefined) {
        if (y !== markers[1][slot]) return undefined
        params.push({ slot })
      } else if (x === y && !Object.values(markers[1]).includes(y as string)) {
        params.push({ value: x })
      } else {
        return undefined
      }
    }
    statements.push({ parts, params })
  }
  return { statements }
}

/** The template's statements with `values` in their slots: SQL of one level, cheap to turn into text. */
export function fillTemplate<K extends string>(template: StatementTemplate<K>, values: Record<K, unknown>): SQL[] {
  return template.statements.map(({ parts, params }) => {
    const chunks: (StringChunk | Param)[] = [new StringChunk(parts[0])]
    for (let i = 0; i < params.length; i++) {
      const p = params[i]
      chunks.push(new Param('slot' in p ? values[p.slot] : p.value), new StringChunk(parts[i + 1]))
    }
    return new SQL(chunks)
  })
}
