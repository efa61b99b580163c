import { and, eq } from 'drizzle-orm'
import { changes, notifications } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

export interface ViewsWorld {
  t: TestApp
  /** Owner of the panel and its views, tenant-a. */
  alice: TestClient
  /** Another user of tenant-a (owns a panel there, so is "known in the tenant"). */
  bob: TestClient
  /** A user of tenant-b. */
  eve: TestClient
  panelId: number
  bobPanelId: number
  evePanelId: number
}

/** A fresh app with two users in tenant-a (each owning a panel) and one in tenant-b. */
export async function viewsWorld(): Promise<ViewsWorld> {
  const t = await makeTestApp()
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const bob = clientFor(t.app, 'tenant-a', 'bob')
  const eve = clientFor(t.app, 'tenant-b', 'eve')
  const panel = async (c: TestClient, name: string) =>
    (await c.post('/api/panels', { name, tenantId: c.tenantId, userId: c.userId })).body.id as number
  return {
    t,
    alice,
    bob,
    eve,
    panelId: await panel(alice, 'Diabetes'),
    bobPanelId: await panel(bob, 'Cardio'),
    evePanelId: await panel(eve, 'Other tenant'),
  }
}

/** Creates a view through the API and returns its body (asserting 201). */
export async function createView(c: TestClient, panelId: number, extra: Record<string, unknown> = {}) {
  const res = await c.post('/api/views', { name: 'My view', panelId, tenantId: c.tenantId, userId: c.userId, ...extra })
  if (res.status !== 201) throw new Error(`view create failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** Notifications as stored (the notifications endpoint belongs to another module). */
export const notificationsOf = (t: TestApp, tenantId: string) =>
  t.deps.db.select().from(notifications).where(eq(notifications.tenantId, tenantId)).orderBy(notifications.id)

/** Change records of one view, oldest first. */
export const viewChanges = (t: TestApp, tenantId: string, viewId: number) =>
  t.deps.db
    .select()
    .from(changes)
    .where(and(eq(changes.tenantId, tenantId), eq(changes.entityType, 'View'), eq(changes.entityId, viewId)))
    .orderBy(changes.id)
