import { createHmac } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { changes, dataSources } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { createPanel, createSource, currentRecords, runsOf } from './fixtures.ts'

const SECRET = 'whsec-0123456789abcdef'
let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})

const ALL_EVENTS = ['data.created', 'data.updated', 'data.deleted', 'sync.started', 'sync.completed', 'sync.failed']
const webhookConfig = (extra: Record<string, unknown> = {}) => ({
  endpoint: 'ehr-patients',
  secret: SECRET,
  events: ALL_EVENTS,
  ...extra,
})
const sign = (body: string, secret = SECRET) => createHmac('sha256', secret).update(body).digest('hex')

/** Posts a raw body (no token) with a signature header unless `signature` is null. */
async function deliver(body: unknown, options: { endpoint?: string; signature?: string | null; header?: string } = {}) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body)
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const signature = options.signature === undefined ? `sha256=${sign(raw)}` : options.signature
  if (signature !== null) headers[options.header ?? 'X-Signature-256'] = signature
  const res = await t.app.request(`/api/webhooks/${options.endpoint ?? 'ehr-patients'}`, { method: 'POST', headers, body: raw })
  return { status: res.status, body: await res.json() }
}

async function webhookSource(extra: Record<string, unknown> = {}) {
  const res = await createSource(alice, panelId, webhookConfig(extra), 'webhook')
  expect(res.status).toBe(201)
  return res.body as { id: number; syncStatus: string; config: Record<string, unknown> }
}

const keys = async (id: number) => (await currentRecords(t, id)).map((r) => r.key).sort()

describe('webhook sources', () => {
  it('are created pending with the secret masked, and a manual sync is a clear 400', async () => {
    const source = await webhookSource()
    expect(source.syncStatus).toBe('pending')
    expect(source.config).toMatchObject({ endpoint: 'ehr-patients', secret: '<SECRET>' })
    const [row] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, source.id))
    expect(row.webhookEndpoint).toBe('ehr-patients')
    expect(JSON.stringify(row.config)).not.toContain(SECRET)
    const sync = await alice.post(`/api/datasources/${source.id}/sync`)
    expect(sync.status).toBe(400)
    expect(sync.body.message).toMatch(/receive their data by push/)
    expect(await runsOf(t, source.id)).toEqual([])
  })

  it('validates the config and keeps endpoints unique service-wide (409)', async () => {
    const bad = await createSource(alice, panelId, { endpoint: 'a b', events: [] }, 'webhook')
    expect(bad.status).toBe(400)
    expect(bad.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'config.endpoint',
      'config.events',
      'config.secret',
    ])
    await webhookSource()
    const bob = clientFor(t.app, 'tenant-b', 'bob')
    const bobPanel = (await createPanel(bob)).id
    const dup = await createSource(bob, bobPanel, webhookConfig(), 'webhook')
    expect(dup.status).toBe(409)
    const other = (await createSource(bob, bobPanel, webhookConfig({ endpoint: 'bob-feed' }), 'webhook')).body
    const renamed = await bob.put(`/api/datasources/${other.id}`, { config: webhookConfig({ secret: '<SECRET>' }) })
    expect(renamed.status).toBe(409)
  })
})

describe('POST /api/webhooks/{endpoint}', () => {
  it('applies a signed delivery without a JWT: upsert, update and delete by key', async () => {
    const source = await webhookSource()
    const created = await deliver({
      id: 'evt-1',
      event: 'data.created',
      data: [
        { id: 'p1', name: 'Ada' },
        { id: 'p2', name: 'Grace' },
      ],
    })
    expect(created).toEqual({ status: 200, body: { received: 1, applied: 1, ignored: 0, duplicates: 0 } })
    // Bare hex is accepted too.
    const raw = JSON.stringify({ id: 'evt-2', event: 'data.updated', data: { id: 'p1', name: 'Ada Lovelace' } })
    expect((await deliver(raw, { signature: sign(raw) })).status).toBe(200)
    expect((await deliver({ id: 'evt-3', event: 'data.deleted', data: { id: 'p2' } })).status).toBe(200)
    expect(await currentRecords(t, source.id)).toEqual([{ key: 'p1', data: { id: 'p1', name: 'Ada Lovelace' } }])
    const runs = await runsOf(t, source.id)
    expect(runs.map((r) => [r.trigger, r.status, r.rowsWritten, r.rowsDeleted])).toEqual([
      ['webhook', 'success', 2, 0],
      ['webhook', 'success', 1, 0],
      ['webhook', 'success', 0, 1],
    ])
    const [row] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, source.id))
    expect(row).toMatchObject({ syncStatus: 'success', lastSyncAt: '2026-01-01T12:00:00.000Z' })
    const syncChanges = await t.deps.db.select().from(changes).where(eq(changes.action, 'SYNC'))
    expect(syncChanges).toHaveLength(3)
  })

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'refuses missing and wrong signatures with 401, storing nothing, through the constant-time verify',
    async () => {
      const source = await webhookSource()
      const verify = vi.spyOn(crypto.subtle, 'verify')
      const event = { id: 'e', event: 'data.created', data: { id: 'x' } }
      const missing = await deliver(event, { signature: null })
      expect(missing.status).toBe(401)
      expect(missing.body.message).toBe('The webhook signature header is missing')
      const wrong = await deliver(event, { signature: `sha256=${sign(JSON.stringify(event), 'another-secret')}` })
      expect(wrong.status).toBe(401)
      expect(wrong.body.message).toBe('The webhook signature is not valid')
      expect((await deliver(event, { signature: 'sha256=zz' })).status).toBe(401)
      expect(verify).toHaveBeenCalledWith('HMAC', expect.anything(), expect.any(Uint8Array), expect.any(Uint8Array))
      verify.mockRestore()
      expect(await currentRecords(t, source.id)).toEqual([])
      expect(await runsOf(t, source.id)).toEqual([])
      // A custom header name, and a signed body whose bytes changed after signing.
      await alice.put(`/api/datasources/${source.id}`, {
        config: webhookConfig({ secret: '<SECRET>', signatureHeader: 'X-Hub' }),
      })
      expect((await deliver(event, { header: 'X-Hub' })).status).toBe(200)
      const raw = JSON.stringify(event)
      expect((await deliver(`${raw} `, { header: 'X-Hub', signature: sign(raw) })).status).toBe(401)
    },
  )

  it('answers 404 for an unknown endpoint and 413 for a body over 1 MiB', async () => {
    await webhookSource()
    const unknown = await deliver({ event: 'data.created', data: { id: 'x' } }, { endpoint: 'nope' })
    expect(unknown.status).toBe(404)
    const big = JSON.stringify({ event: 'data.created', data: { id: 'x', pad: 'x'.repeat(1024 * 1024) } })
    expect((await deliver(big)).status).toBe(413)
  })

  it('acknowledges and ignores unsubscribed kinds, and never applies an event id twice', async () => {
    const source = await webhookSource({ events: ['data.created'], batchEvents: true })
    const first = await deliver([
      { id: 'a', event: 'data.created', data: { id: 'p1', v: 1 } },
      { id: 'b', event: 'data.deleted', data: { id: 'p1' } },
      { id: 'a', event: 'data.created', data: { id: 'p1', v: 2 } },
    ])
    expect(first.body).toEqual({ received: 3, applied: 1, ignored: 1, duplicates: 1 })
    const again = await deliver([
      { id: 'a', event: 'data.created', data: { id: 'p1', v: 3 } },
      { id: 'c', event: 'data.created', data: [{ id: 'p2' }, { id: 'p3' }] },
    ])
    expect(again.body).toEqual({ received: 2, applied: 1, ignored: 0, duplicates: 1 })
    expect(await currentRecords(t, source.id)).toEqual([
      { key: 'p1', data: { id: 'p1', v: 1 } },
      { key: 'p2', data: { id: 'p2' } },
      { key: 'p3', data: { id: 'p3' } },
    ])
    // Without batchEvents an array is refused, and a bad event refuses the whole delivery.
    await alice.put(`/api/datasources/${source.id}`, { config: webhookConfig({ secret: '<SECRET>', events: ['data.created'] }) })
    expect((await deliver([{ event: 'data.created', data: { id: 'p9' } }])).status).toBe(400)
    const invalid = await deliver({ event: 'data.created', data: [{ id: 'p9' }, { name: 'no key' }] })
    expect(invalid.status).toBe(400)
    expect(invalid.body.details).toEqual([{ path: 'body.data', message: "every record needs its key field 'id'" }])
    expect(await keys(source.id)).toEqual(['p1', 'p2', 'p3'])
  })

  it('takes records at dataPath with a custom keyField', async () => {
    const source = await webhookSource({ dataPath: 'payload.items', keyField: 'mrn' })
    await deliver({ event: 'data.created', payload: { items: [{ mrn: 'M1' }, { mrn: 'M2' }] } })
    await deliver({ event: 'data.deleted', payload: { items: ['M1'] } })
    expect(await keys(source.id)).toEqual(['M2'])
  })

  it('replaces the records with a snapshot at sync.completed, removing those it lacks', async () => {
    const source = await webhookSource()
    await deliver({ event: 'data.created', data: [{ id: 'old1' }, { id: 'keep', v: 1 }] })
    expect((await deliver({ id: 's1', event: 'sync.started' })).status).toBe(200)
    await deliver({ event: 'data.created', data: [{ id: 'keep', v: 2 }, { id: 'new1' }] })
    // Readers still see the previous generation while the snapshot is open.
    expect(await keys(source.id)).toEqual(['keep', 'old1'])
    expect((await deliver({ id: 's2', event: 'sync.completed' })).status).toBe(200)
    expect(await currentRecords(t, source.id)).toEqual([
      { key: 'keep', data: { id: 'keep', v: 2 } },
      { key: 'new1', data: { id: 'new1' } },
    ])
    const snapshot = (await runsOf(t, source.id)).at(-1)!
    expect(snapshot).toMatchObject({ trigger: 'webhook', status: 'success', rowsRead: 2, rowsWritten: 2, rowsDeleted: 1 })
    expect((await deliver({ event: 'sync.completed' })).status).toBe(409)
  })

  it('keeps the previous records when the sender reports sync.failed', async () => {
    const source = await webhookSource({ batchEvents: true })
    await deliver([{ event: 'data.created', data: [{ id: 'a' }, { id: 'b' }] }])
    await deliver([
      { event: 'sync.started' },
      { event: 'data.created', data: { id: 'c' } },
      { event: 'sync.failed', data: { message: 'EHR export crashed' } },
    ])
    expect(await keys(source.id)).toEqual(['a', 'b'])
    const [row] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, source.id))
    expect(row).toMatchObject({
      syncStatus: 'error',
      errorMessage: 'The sender reported a failed synchronisation: EHR export crashed',
    })
    const all = await t.client.execute({ sql: 'SELECT count(*) AS n FROM records WHERE data_source_id = ?', args: [source.id] })
    expect(Number(all.rows[0].n)).toBe(2)
  })

  it('records a sync.failed sent before any snapshot: source in error, a failed run, records kept', async () => {
    const source = await webhookSource()
    await deliver({ event: 'data.created', data: [{ id: 'a' }, { id: 'b' }] })
    t.clock.advance(60_000)
    const res = await deliver({ id: 'f1', event: 'sync.failed', error: 'EHR export could not start' })
    expect(res).toEqual({ status: 200, body: { received: 1, applied: 1, ignored: 0, duplicates: 0 } })
    const [listed] = (await alice.get(`/api/panels/${panelId}/datasources`)).body
    expect(listed).toMatchObject({
      id: source.id,
      syncStatus: 'error',
      errorMessage: 'The sender reported a failed synchronisation: EHR export could not start',
      lastSyncAt: '2026-01-01T12:00:00.000Z',
    })
    expect(await keys(source.id)).toEqual(['a', 'b'])
    const runs = (await alice.get(`/api/datasources/${source.id}/sync-runs`)).body
    expect(runs.total).toBe(2)
    expect(runs.syncRuns[0]).toMatchObject({
      status: 'error',
      trigger: 'webhook',
      startedAt: '2026-01-01T12:01:00.000Z',
      finishedAt: '2026-01-01T12:01:00.000Z',
      rowsRead: 0,
      rowsWritten: 0,
      error: 'The sender reported a failed synchronisation: EHR export could not start',
    })
    const syncChanges = (await t.deps.db.select().from(changes).where(eq(changes.entityId, source.id))).filter(
      (c) => c.entityType === 'DataSource' && c.action === 'SYNC',
    )
    expect(syncChanges.at(-1)?.changes).toEqual({
      syncStatus: { oldValue: 'success', newValue: 'error' },
      errorMessage: { newValue: 'The sender reported a failed synchronisation: EHR export could not start' },
    })
  })

  it('applies a repeated sync.failed event id once, and the source recovers with the next delivery', async () => {
    const source = await webhookSource()
    await deliver({ event: 'data.created', data: { id: 'a' } })
    expect((await deliver({ id: 'f1', event: 'sync.failed' })).body).toMatchObject({ applied: 1, duplicates: 0 })
    const again = await deliver({ id: 'f1', event: 'sync.failed', message: 'told twice' })
    expect(again).toEqual({ status: 200, body: { received: 1, applied: 0, ignored: 0, duplicates: 1 } })
    const failed = (await runsOf(t, source.id)).filter((r) => r.status === 'error')
    expect(failed).toHaveLength(1)
    const [row] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, source.id))
    expect(row).toMatchObject({ syncStatus: 'error', errorMessage: 'The sender reported a failed synchronisation' })
    // No lease is left behind: a snapshot can start, and data brings the source back to success.
    expect((await deliver({ id: 's1', event: 'sync.started' })).status).toBe(200)
    await deliver({ event: 'data.created', data: { id: 'b' } })
    expect((await deliver({ id: 's2', event: 'sync.completed' })).status).toBe(200)
    expect(await keys(source.id)).toEqual(['b'])
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body[0]).toMatchObject({
      syncStatus: 'success',
      errorMessage: null,
    })
  })

  it('still answers 409 for sync.completed without an open snapshot', async () => {
    const source = await webhookSource()
    expect((await deliver({ event: 'sync.completed' })).status).toBe(409)
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body[0]).toMatchObject({
      id: source.id,
      syncStatus: 'pending',
    })
  })

  it('writes records only into the owning tenant', async () => {
    const source = await webhookSource()
    await deliver({ event: 'data.created', data: { id: 'secret-patient' } })
    const stored = await t.client.execute({
      sql: 'SELECT DISTINCT tenant_id FROM records WHERE data_source_id = ?',
      args: [source.id],
    })
    expect(stored.rows.map((r) => r.tenant_id)).toEqual(['tenant-a'])
    const bob = clientFor(t.app, 'tenant-b', 'bob')
    expect((await bob.get(`/api/datasources/${source.id}/sync-runs?tenantId=tenant-b`)).status).toBe(404)
    expect((await bob.get(`/api/panels/${panelId}/datasources?tenantId=tenant-b`)).status).toBe(404)
  })
})
