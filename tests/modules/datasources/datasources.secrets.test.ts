import { and, eq } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { changes } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { createPanel, createSource, currentRecords, startApiFixture } from './fixtures.ts'

let api: Awaited<ReturnType<typeof startApiFixture>>
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  api = await startApiFixture()
})
afterAll(() => api.server.close())

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})

const secretConfig = (token = 'tok-123') => ({
  apiEndpoint: `${api.server.url}/echo-auth`,
  headers: { Authorization: 'Bearer header-secret', 'X-Trace': 'visible' },
  authentication: { type: 'bearer', token },
})
const rawConfig = async (id: number) => {
  const r = await t.client.execute({ sql: 'SELECT config FROM data_sources WHERE id = ?', args: [id] })
  return String(r.rows[0].config)
}
const changeRows = (id: number) =>
  t.deps.db
    .select()
    .from(changes)
    .where(and(eq(changes.entityType, 'DataSource'), eq(changes.entityId, id)))

describe('POST /api/panels/{panelId}/datasources (secrets)', () => {
  it('encrypts secrets at rest and answers them as <SECRET>', async () => {
    const res = await createSource(alice, panelId, secretConfig())
    expect(res.status).toBe(201)
    expect(res.body.config).toEqual({
      apiEndpoint: `${api.server.url}/echo-auth`,
      headers: { Authorization: '<SECRET>', 'X-Trace': 'visible' },
      authentication: { type: 'bearer', token: '<SECRET>' },
    })
    const raw = await rawConfig(res.body.id)
    expect(raw).not.toContain('tok-123')
    expect(raw).not.toContain('header-secret')
    const stored = JSON.parse(raw)
    expect(stored.authentication.token).toMatch(/^enc:v1:/)
    expect(stored.headers.Authorization).toMatch(/^enc:v1:/)
    // The connector received the decrypted token.
    expect((await currentRecords(t, res.body.id))[0].data.authorization).toBe('Bearer tok-123')
  })

  it('masks the password of a connection string and never stores it in clear', async () => {
    const res = await createSource(
      alice,
      panelId,
      { connectionString: 'postgres://reader:pa%40ss@127.0.0.1:1/x', table: 't' },
      'database',
    )
    expect(res.body.config.connectionString).toBe('postgres://reader:<SECRET>@127.0.0.1:1/x')
    expect(await rawConfig(res.body.id)).not.toContain('pa%40ss')
    expect(JSON.parse(await rawConfig(res.body.id)).connectionString).toMatch(/^enc:v1:/)
  })

  it('never writes a secret into change records', async () => {
    const { body } = await createSource(alice, panelId, secretConfig())
    await alice.put(`/api/datasources/${body.id}`, { config: secretConfig('tok-456') })
    const all = JSON.stringify(await changeRows(body.id))
    expect(all).not.toContain('tok-123')
    expect(all).not.toContain('tok-456')
    expect(all).not.toContain('header-secret')
    expect(all).toContain('<SECRET>')
  })

  it('refuses "<SECRET>" where no secret is stored, naming the field', async () => {
    const res = await createSource(alice, panelId, secretConfig('<SECRET>'))
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual([
      { path: 'config.authentication.token', message: expect.stringContaining('none is stored') },
    ])
  })
})

describe('PUT /api/datasources/{id} (secrets)', () => {
  it('keeps the stored secret when "<SECRET>" is sent back', async () => {
    const { body } = await createSource(alice, panelId, secretConfig())
    const res = await alice.put(`/api/datasources/${body.id}`, { config: { ...body.config, headers: { 'X-Trace': 'new' } } })
    expect(res.status).toBe(200)
    expect(res.body.config.authentication.token).toBe('<SECRET>')
    await alice.post(`/api/datasources/${body.id}/sync`)
    expect((await currentRecords(t, body.id))[0].data.authorization).toBe('Bearer tok-123')
  })

  it('records a config change when only a secret changed, and uses the new secret', async () => {
    const { body } = await createSource(alice, panelId, secretConfig())
    await alice.put(`/api/datasources/${body.id}`, { config: secretConfig('tok-new') })
    const update = (await changeRows(body.id)).find((c) => c.action === 'UPDATE')
    expect(update?.changes.config).toBeDefined()
    await alice.post(`/api/datasources/${body.id}/sync`)
    expect((await currentRecords(t, body.id))[0].data.authorization).toBe('Bearer tok-new')
  })

  it('keeps a connection-string password sent back as <SECRET>', async () => {
    const config = { connectionString: 'postgres://reader:hunter2@127.0.0.1:1/x', table: 't' }
    const { body } = await createSource(alice, panelId, config, 'database')
    await alice.put(`/api/datasources/${body.id}`, {
      config: { connectionString: 'postgres://reader:<SECRET>@127.0.0.2:1/x', table: 't' },
    })
    const stored = JSON.parse(await rawConfig(body.id)).connectionString
    expect(await t.deps.secrets.decrypt(stored)).toBe('postgres://reader:hunter2@127.0.0.2:1/x')
  })
})
