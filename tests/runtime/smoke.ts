import { createHmac } from 'node:crypto'
import { sign } from 'hono/jwt'
import { expect, it } from 'vitest'

/** A running service: its base URL (with a mount path when embedded) and the JWT_SECRET it was given. */
export interface SmokeTarget {
  base: string
  secret: string
  /** The runtime's name when it cannot render PDF exports (they answer 400 naming it). */
  noPdf?: string
}

/** A real HS256 token, signed the way tests/helpers/auth.ts and src/lib/tokens.ts sign them. */
export async function bearer(secret: string, tenantId: string, userId: string) {
  const iat = Math.floor(Date.now() / 1000)
  const token = await sign({ sub: userId, tenantId, userId, iat, exp: iat + 3600 }, secret, 'HS256')
  return { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
}

/** One HTTP call with a deadline, answering status, headers and the parsed JSON (or text) body. */
async function call(url: string, init: RequestInit = {}) {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) })
  const text = await res.text()
  let body: any = text
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    // not JSON (the docs page): the text stays
  }
  return { status: res.status, headers: res.headers, body }
}

/**
 * The runtime-agnostic smoke suite: registers its cases in the caller's `describe`. `target`
 * is read when the cases run (after the caller's beforeAll started the service). The cases
 * share one tenant's data and run in order, like a user's first session.
 */
export function smokeSuite(target: () => SmokeTarget) {
  const tenant = `smoke-${crypto.randomUUID().slice(0, 8)}`
  const other = `${tenant}-other`
  const state: { panelId?: number; viewId?: number } = {}
  const url = (path: string) => `${target().base}${path}`
  const as = (tenantId: string, userId = 'alice') => bearer(target().secret, tenantId, userId)
  const q = (tenantId = tenant, userId = 'alice') => `tenantId=${tenantId}&userId=${userId}`

  it('answers /health: healthy with the database up', async () => {
    const res = await call(url('/health'))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ status: 'healthy', database: { status: 'up' } })
  })

  it('serves the OpenAPI document and the docs page', async () => {
    const doc = await call(url('/openapi.json'))
    expect(doc.status).toBe(200)
    expect(doc.body.openapi).toBe('3.0.0')
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/api/panels', '/api/views/{id}/publish']))
    const page = await call(url('/docs'))
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.body).toContain('openapi.json')
  })

  it("serves the docs page's script and stylesheet itself: no other host, versioned, cached as immutable", async () => {
    const page = url('/docs')
    const { body: html } = await call(page)
    const origin = new URL(page).origin
    // Every URL the page loads (script, link, img, iframe…) and any absolute URL anywhere in it.
    const referenced = [...html.matchAll(/\s(?:src|href|srcset|poster|data)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1])
    const absolute = [...html.matchAll(/(?:https?:)?\/\/[^\s"'<>)]+/gi)].map((m) => m[0])
    expect(referenced.length).toBeGreaterThan(0)
    for (const ref of [...referenced, ...absolute]) expect(new URL(ref, page).origin, ref).toBe(origin)
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => new URL(m[1], page).href)
    const styles = [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"/g)].map((m) => new URL(m[1], page).href)
    expect(scripts).toHaveLength(1)
    expect(styles).toHaveLength(1)
    for (const [asset, type, marker] of [
      [scripts[0], 'text/javascript', 'SwaggerUIBundle'],
      [styles[0], 'text/css', '.swagger-ui'],
    ]) {
      expect(asset).toMatch(/\/swagger-ui-dist@\d+\.\d+\.\d+\//)
      const res = await fetch(asset, { signal: AbortSignal.timeout(15_000) })
      expect(res.status, asset).toBe(200)
      expect(res.headers.get('content-type')).toContain(type)
      expect(res.headers.get('cache-control')).toMatch(/\bimmutable\b/)
      expect(Number(/max-age=(\d+)/.exec(res.headers.get('cache-control') ?? '')?.[1])).toBeGreaterThanOrEqual(31_536_000)
      expect(await res.text()).toContain(marker)
    }
    // Only the page's own version is served: another version, or another file of the package, is a 404.
    const otherVersion = scripts[0].replace(/@\d+\.\d+\.\d+\//, '@0.0.1/')
    expect((await call(otherVersion)).status).toBe(404)
    expect((await call(scripts[0].replace(/[^/]+$/, 'index.html'))).status).toBe(404)
  })

  it('refuses a request without a token with 401', async () => {
    const res = await call(url(`/api/panels?${q()}`))
    expect(res.status).toBe(401)
    expect(res.body).toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED' })
    expect(res.headers.get('www-authenticate')).toContain('Bearer')
  })

  it('creates a panel and lists it', async () => {
    const headers = await as(tenant)
    const created = await call(url('/api/panels'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Smoke panel', description: 'runtime smoke', tenantId: tenant, userId: 'alice' }),
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ name: 'Smoke panel', tenantId: tenant, userId: 'alice' })
    state.panelId = created.body.id
    const list = await call(url(`/api/panels?${q()}`), { headers })
    expect(list.status).toBe(200)
    expect(list.body.map((p: { id: number }) => p.id)).toEqual([state.panelId])
  })

  it("refuses a request naming another tenant than the token's with 403", async () => {
    const res = await call(url(`/api/panels?${q(other)}`), { headers: await as(tenant) })
    expect(res.status).toBe(403)
    expect(res.body).toMatchObject({ error: 'Access denied to tenant', statusCode: 403 })
  })

  it("answers 404 for another tenant's panel", async () => {
    const res = await call(url(`/api/panels/${state.panelId}?${q(other)}`), { headers: await as(other) })
    expect(res.status).toBe(404)
    expect(res.body.statusCode).toBe(404)
  })

  it('adds a base column and lists it', async () => {
    const headers = await as(tenant)
    const created = await call(url(`/api/panels/${state.panelId}/columns/base`), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        name: 'Birth Date',
        fhirPath: 'Patient.birthDate',
        type: 'date',
        tenantId: tenant,
        userId: 'alice',
      }),
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ name: 'Birth Date', type: 'date' })
    const list = await call(url(`/api/panels/${state.panelId}/columns?${q()}`), { headers })
    expect(list.status).toBe(200)
    expect(list.body.baseColumns.map((c: { name: string }) => c.name)).toEqual(['Birth Date'])
  })

  it('loads the FHIRPath engine on first need: previews a where() and reports a syntax error', async () => {
    const headers = await as(tenant)
    const official = { resourceType: 'Patient', name: [{ use: 'nickname' }, { use: 'official', family: 'Lovelace' }] }
    const preview = await call(url('/api/formulas/preview'), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        formula: `FHIRPATH("Patient.name.where(use = 'official').family")`,
        values: {},
        record: official,
        tenantId: tenant,
        userId: 'alice',
      }),
    })
    expect(preview.status).toBe(200)
    expect(preview.body.value).toBe('Lovelace')
    const invalid = await call(url(`/api/panels/${state.panelId}/columns/base`), {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Broken', fhirPath: 'Patient.name.where(', type: 'text', tenantId: tenant, userId: 'alice' }),
    })
    expect(invalid.status).toBe(400)
    expect(invalid.body.message).toMatch(/^Invalid FHIRPath at position \d+/)
  })

  it('creates a view and publishes it', async () => {
    const headers = await as(tenant)
    const created = await call(url('/api/views'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Smoke view', panelId: state.panelId, tenantId: tenant, userId: 'alice' }),
    })
    expect(created.status).toBe(201)
    state.viewId = created.body.id
    const published = await call(url(`/api/views/${state.viewId}/publish`), {
      method: 'POST',
      headers,
      body: JSON.stringify({ tenantId: tenant, userId: 'alice' }),
    })
    expect(published.status).toBe(200)
    expect(published.body).toMatchObject({ id: state.viewId, isPublished: true, publishedBy: 'alice' })
  })

  it('exports the view as csv and as a pdf document', async () => {
    const headers = await as(tenant)
    const csv = await fetch(url(`/api/views/${state.viewId}/export?format=csv&${q()}`), {
      headers,
      signal: AbortSignal.timeout(15_000),
    })
    expect(csv.status).toBe(200)
    expect((await csv.text()).split('\n')[0]).toContain('Birth Date')
    const pdf = await fetch(url(`/api/views/${state.viewId}/export?format=pdf&${q()}`), {
      headers,
      signal: AbortSignal.timeout(15_000),
    })
    if (target().noPdf) {
      expect(pdf.status).toBe(400)
      expect((await pdf.json()).message).toContain(`not available on the ${target().noPdf} runtime`)
      return
    }
    expect(pdf.status).toBe(200)
    expect(pdf.headers.get('content-type')).toContain('application/pdf')
    expect(new TextDecoder().decode((await pdf.arrayBuffer()).slice(0, 5))).toBe('%PDF-')
  })

  it("keeps exact values from a webhook source through rows, nested filters and the web client's spellings", async () => {
    const headers = await as(tenant)
    const post = (path: string, body: unknown, method = 'POST') =>
      call(url(path), { method, headers, body: JSON.stringify({ tenantId: tenant, userId: 'alice', ...(body as object) }) })
    const panel = await post('/api/panels', { name: 'Exact values' })
    const panelId = panel.body.id
    const endpoint = `${tenant}-feed`
    const secret = 'smoke-webhook-secret-0123456789'
    const source = await post(`/api/panels/${panelId}/datasources`, {
      type: 'webhook',
      config: { endpoint, secret, events: ['data.created', 'sync.failed'], batchEvents: true },
    })
    expect(source.status).toBe(201)
    expect(source.body.lastSync).toBe(source.body.lastSyncAt)
    for (const [name, sourceField, type] of [
      ['Phone', 'phone', 'text'],
      ['Color', 'color', 'text'],
      ['Score', 'score', 'number'],
    ])
      expect((await post(`/api/panels/${panelId}/columns/base`, { name, sourceField, type })).status).toBe(201)
    const records = [
      { id: 'a', phone: '', color: ['blue'], score: 0 },
      { id: 'b', phone: '555', color: 'red', score: 3 },
      { id: 'c', color: [] },
    ]
    const raw = JSON.stringify([{ event: 'data.created', data: records }])
    const delivered = await call(url(`/api/webhooks/${endpoint}`), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-signature-256': `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`,
      },
      body: raw,
    })
    expect(delivered.status).toBe(200)
    const rows = await call(url(`/api/panels/${panelId}/rows?sort=Score&${q()}`), { headers })
    expect(rows.status).toBe(200)
    expect(rows.body.data.map((r: Record<string, unknown>) => [r.Phone, r.Color, r.Score])).toEqual([
      ['', ['blue'], 0],
      ['555', 'red', 3],
      [null, [], null],
    ])
    const filters = encodeURIComponent(
      JSON.stringify([
        {
          logicalOperator: 'or',
          conditions: [
            { columnTitle: 'Phone', operator: 'isEmpty' },
            { columnTitle: 'Score', operator: 'gt', value: 2 },
          ],
        },
        { columnTitle: 'Phone', operator: 'isNotNull' },
      ]),
    )
    const filtered = await call(url(`/api/panels/${panelId}/rows?filters=${filters}&${q()}`), { headers })
    expect(filtered.status).toBe(200)
    expect(filtered.body.data.map((r: Record<string, unknown>) => r.Phone).sort()).toEqual(['', '555'])
    const view = await post('/api/views', { name: 'Client view', panelId })
    const put = await post(
      `/api/views/${view.body.id}/filters`,
      { filters: [{ columnName: 'Score', operator: 'gte', value: 0, logicalOperator: 'and' }] },
      'PUT',
    )
    expect(put.status).toBe(200)
    expect(put.body.filters[0]).toMatchObject({ operator: 'gte', logicalOperator: 'and' })
    const removed = await call(url(`/api/views/${view.body.id}?${q()}`), {
      method: 'DELETE',
      headers: { authorization: headers.authorization },
    })
    expect(removed.status).toBe(204)
  })

  it('lists the changes of the session: panel created, column created, view published', async () => {
    const res = await call(url(`/api/changes/panels?${q()}`), { headers: await as(tenant) })
    expect(res.status).toBe(200)
    const seen = res.body.changes.map((c: { entityType: string; action: string }) => `${c.entityType}:${c.action}`)
    expect(seen).toEqual(expect.arrayContaining(['Panel:CREATE', 'Column:CREATE', 'View:PUBLISH']))
    expect(res.body.changes.every((c: { tenantId: string }) => c.tenantId === tenant)).toBe(true)
  })

  it("uploads a CSV to a file source, syncs it from the runtime's file store and reads the rows", async () => {
    const headers = await as(tenant)
    const post = (path: string, body: object) =>
      call(url(path), { method: 'POST', headers, body: JSON.stringify({ tenantId: tenant, userId: 'alice', ...body }) })
    const panelId = (await post('/api/panels', { name: 'Uploaded' })).body.id
    expect((await post(`/api/panels/${panelId}/columns/base`, { name: 'Name', sourceField: 'name', type: 'text' })).status).toBe(
      201,
    )
    const source = await post(`/api/panels/${panelId}/datasources`, { type: 'csv', config: { filePath: 'none.csv' } })
    expect(source.status).toBe(201)
    const upload = await call(url(`/api/datasources/${source.body.id}/file?filename=ward.csv&${q()}`), {
      method: 'PUT',
      headers: { authorization: headers.authorization, 'content-type': 'text/csv' },
      body: 'id,name\n1,Grace\n2,Ada\n',
    })
    expect(upload.status).toBe(200)
    expect(upload.body).toMatchObject({ syncStatus: 'success', recordsProcessed: 2 })
    const rows = await call(url(`/api/panels/${panelId}/rows?sort=Name&${q()}`), { headers })
    expect(rows.body.data.map((r: { Name: string }) => r.Name)).toEqual(['Ada', 'Grace'])
  })
}
