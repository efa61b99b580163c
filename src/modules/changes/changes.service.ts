import type { SQL } from 'drizzle-orm'
import { type ChangeAction, type ChangeEntity, changes, type FieldChanges } from '../../db/schema.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'

export interface ChangeEvent {
  panelId: number | SQL
  entityType: ChangeEntity
  entityId: number | SQL
  action: ChangeAction
  changes: FieldChanges
}

/**
 * The insert of one change record, to run in the caller's `db.batch` with the change itself
 * (spec §6.1; CONTRACT: Changes). Ids not known before the batch may be SQL (`last_insert_rowid()`).
 */
export function changeInsert(ctx: ServiceContext, event: ChangeEvent) {
  const { userAgent, ipAddress, source } = ctx.meta
  return ctx.db.insert(changes).values({
    tenantId: ctx.scope.tenantId,
    userId: ctx.scope.userId,
    panelId: event.panelId,
    entityType: event.entityType,
    entityId: event.entityId,
    action: event.action,
    changes: event.changes,
    metadata: { source, ...(userAgent ? { userAgent } : {}), ...(ipAddress ? { ipAddress } : {}) },
    createdAt: isoNow(ctx.clock),
  })
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/** Field diffs `{ field: { oldValue, newValue } }` of the fields that differ. */
export function diffFields<T extends Record<string, unknown>>(
  before: Partial<T>,
  after: Partial<T>,
  fields: readonly (keyof T & string)[],
): FieldChanges {
  const out: FieldChanges = {}
  for (const f of fields) {
    if (!(f in after) || same(before[f], after[f])) continue
    out[f] = { oldValue: before[f] ?? null, newValue: after[f] ?? null }
  }
  return out
}

/** The fields of a created entity as `{ field: { newValue } }`. */
export function createdFields<T extends Record<string, unknown>>(entity: T, fields: readonly (keyof T & string)[]): FieldChanges {
  const out: FieldChanges = {}
  for (const f of fields) if (entity[f] !== undefined) out[f] = { newValue: entity[f] }
  return out
}
