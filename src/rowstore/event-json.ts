/**
 * A stored event as the API and outbound webhooks answer it (LIVE.md "Events"). The one thing the
 * log stores differently from the wire: a `row.updated` keeps the row as the view showed it before
 * (`previous`), and is answered with `changed: { <column>: { from, to } }` for the columns whose
 * values differ (`_id` aside; `""`, `0`, `false`, `[]` and null are all different values).
 */
export function eventData(type: string, data: Record<string, unknown>): Record<string, unknown> {
  if (type !== 'row.updated' || !('previous' in data)) return data
  const { previous, ...rest } = data as { previous: Record<string, unknown>; row: Record<string, unknown> }
  const row = rest.row ?? {}
  const changed: Record<string, { from: unknown; to: unknown }> = {}
  for (const column of new Set([...Object.keys(previous ?? {}), ...Object.keys(row)])) {
    if (column === '_id') continue
    const from = previous?.[column] ?? null
    const to = row[column] ?? null
    if (JSON.stringify(from) !== JSON.stringify(to)) changed[column] = { from, to }
  }
  return { ...rest, changed }
}
