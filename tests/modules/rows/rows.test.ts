import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientFor } from '../../helpers/http.ts'
import { idsOf, query, type RowsWorld, rowsWorld } from './fixtures.ts'

/**
 * The row endpoints: the cohort rule, search, column choice, row errors, generations, and who may
 * read rows (DATA-ENGINE: Endpoints; CONTRACT: Ownership).
 */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

const panelRows = (params: Record<string, unknown> = {}) => w.alice.get(`/api/panels/${w.panelId}/rows${query(params)}`)
const setRule = (cohortRule: unknown) => w.alice.put(`/api/panels/${w.panelId}`, { cohortRule })

async function createView(extra: Record<string, unknown> = {}) {
  const res = await w.alice.post('/api/views', { name: 'Worklist', panelId: w.panelId, ...extra })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body.id as number
}

describe('GET /api/panels/{panelId}/rows', () => {
  it('answers every column of every row with _id, _source and the materialised values', async () => {
    const res = await panelRows({ limit: '2' })
    expect(res.status).toBe(200)
    expect(res.body.data[0]).toEqual({
      _id: w.ids.p1,
      _key: 'p1',
      _source: w.sourceId,
      Name: 'Ada',
      Age: 36,
      Birth: '1990-01-15',
      Seen: '2024-03-01T10:00:00.000Z',
      Active: true,
      Tags: ['vip', 'diabetes'],
      City: 'London',
      Phones: ['111', '222'],
      Double: 72,
    })
  })

  it("carries _errors on rows whose cells break a column's validation", async () => {
    const col = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, {
      name: 'Checked age',
      sourceField: 'age',
      type: 'number',
      properties: { validation: { min: 30 } },
    })
    expect(col.status).toBe(201)
    const res = await panelRows({ filters: [{ columnTitle: 'Name', operator: 'in', value: ['Zoe', 'Ada'] }] })
    const [ada, zoe] = res.body.data
    expect(ada._errors).toBeUndefined()
    expect(zoe._errors).toEqual([{ column: 'Checked age', code: 'VALIDATION', message: expect.stringContaining('at least 30') }])
    expect((await w.alice.delete(`/api/columns/${col.body.id}`)).status).toBe(204)
    expect(Object.keys((await panelRows({ limit: '1' })).body.data[0])).not.toContain('Checked age')
  })

  it('shows only the current generation of each source', async () => {
    const now = '2026-01-01T12:00:00.000Z'
    await w.t.client.execute({
      sql: `INSERT INTO records (tenant_id, panel_id, data_source_id, generation, key, data, cells, cells_version, created_at, updated_at)
            SELECT tenant_id, panel_id, data_source_id, generation + 1, 'ghost', '{}', json_object(?, 'Ghost'), cells_version, ?, ?
            FROM records WHERE panel_id = ? AND key = 'p1'`,
      args: [String(w.columns.Name), now, now, w.panelId],
    })
    const res = await panelRows({ filters: [{ columnTitle: 'Name', operator: 'equals', value: 'Ghost' }] })
    expect(res.body.data).toEqual([])
    expect((await panelRows()).body.meta.total).toBe(6)
  })
})

describe('cohort rule', () => {
  afterAll(async () => {
    expect((await setRule({ conditions: [], logic: 'AND' })).status).toBe(200)
  })

  it('applies to panel rows and view rows alike, before view and request filters', async () => {
    expect((await setRule({ conditions: [{ field: 'Age', operator: 'gte', value: 40 }], logic: 'AND' })).status).toBe(200)
    expect(idsOf(w, (await panelRows()).body)).toEqual(['p2', 'p3', 'p6'])
    const viewId = await createView({ filters: [{ columnTitle: 'Active', operator: 'equals', value: true }] })
    const viewRes = await w.alice.get(`/api/views/${viewId}/rows`)
    expect(idsOf(w, viewRes.body)).toEqual(['p3', 'p6'])
    const narrowed = await w.alice.get(
      `/api/views/${viewId}/rows${query({ filters: [{ columnTitle: 'City', operator: 'equals', value: 'berlin' }] })}`,
    )
    expect(idsOf(w, narrowed.body)).toEqual(['p6'])
  })

  it('combines conditions with OR when the rule says so', async () => {
    const rule = {
      conditions: [
        { field: 'Age', operator: 'gt', value: 60 },
        { field: 'City', operator: 'equals', value: 'PARIS' },
      ],
      logic: 'OR',
    }
    expect((await setRule(rule)).status).toBe(200)
    expect(idsOf(w, (await panelRows()).body)).toEqual(['p2', 'p6'])
  })

  it('a rule naming an unknown column or an operator the column cannot take is a 400 naming the condition', async () => {
    await setRule({ conditions: [{ field: 'Ward', operator: 'equals', value: 3 }], logic: 'AND' })
    const unknown = await panelRows()
    expect(unknown.status).toBe(400)
    expect(unknown.body.details).toEqual([{ path: 'cohortRule.conditions[0].field', message: 'unknown column "Ward"' }])
    await setRule({ conditions: [{ field: 'Active', operator: 'lt', value: true }], logic: 'AND' })
    const typed = await panelRows()
    expect(typed.status).toBe(400)
    expect(typed.body.details[0].path).toBe('cohortRule.conditions[0].operator')
  })
})

describe('search', () => {
  it('matches a case-insensitive substring of any text column', async () => {
    expect(idsOf(w, (await panelRows({ search: 'LON' })).body)).toEqual(['p1', 'p5'])
    // "a" is in Ada, grace, Alan, paris and in the tag "diabetes".
    expect(idsOf(w, (await panelRows({ search: 'a' })).body)).toEqual(['p1', 'p2', 'p3', 'p6'])
  })

  it('searches only searchFields when given, and takes wildcards literally', async () => {
    expect(idsOf(w, (await panelRows({ search: 'a', searchFields: 'Name' })).body)).toEqual(['p1', 'p2', 'p3'])
    expect(idsOf(w, (await panelRows({ search: 'a', searchFields: 'Name, City' })).body)).toEqual(['p1', 'p2', 'p3'])
    expect(idsOf(w, (await panelRows({ search: '%' })).body)).toEqual([])
    const bad = await panelRows({ search: 'a', searchFields: 'Name,Ghost' })
    expect(bad.status).toBe(400)
    expect(bad.body.details).toEqual([{ path: 'searchFields[1]', message: 'unknown column "Ghost"' }])
  })
})

describe('columns of view rows', () => {
  it('returns the config.columns in their order', async () => {
    const id = await createView({ config: { columns: ['Age', 'Name', 'Removed'], groupBy: [], layout: 'table' } })
    const res = await w.alice.get(`/api/views/${id}/rows?limit=1`)
    expect(res.body.data[0]).toEqual({ _id: w.ids.p1, _key: 'p1', _source: w.sourceId, Age: 36, Name: 'Ada' })
    expect(Object.keys(res.body.data[0])).toEqual(['_id', '_key', '_source', 'Age', 'Name'])
  })

  it('hides columns set to false in columnVisibility; all columns when both are empty', async () => {
    const hidden = await createView({ columnVisibility: { Age: false, Tags: false, Phones: true } })
    const row = (await w.alice.get(`/api/views/${hidden}/rows?limit=1`)).body.data[0]
    expect(Object.keys(row)).toEqual(['_id', '_key', '_source', 'Name', 'Birth', 'Seen', 'Active', 'City', 'Phones', 'Double'])
    const both = await createView({ config: { columns: ['Name', 'Age'] }, columnVisibility: { Age: false } })
    expect(Object.keys((await w.alice.get(`/api/views/${both}/rows?limit=1`)).body.data[0])).toEqual([
      '_id',
      '_key',
      '_source',
      'Name',
    ])
    const all = await createView()
    expect(Object.keys((await w.alice.get(`/api/views/${all}/rows?limit=1`)).body.data[0])).toHaveLength(12)
  })
})

describe('who may read rows', () => {
  it("another user of the tenant, or another tenant, gets 404 for the owner's panel rows", async () => {
    for (const c of [w.bob, w.eve]) {
      const res = await c.get(`/api/panels/${w.panelId}/rows`)
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ error: 'Panel not found', code: 'NOT_FOUND' })
    }
    expect((await w.alice.get('/api/panels/99999/rows')).status).toBe(404)
    expect((await w.alice.get('/api/panels/abc/rows')).status).toBe(400)
  })

  it('an admin of the tenant may read the panel rows', async () => {
    const admin = clientFor(w.t.app, 'tenant-a', 'root', { role: 'admin' })
    expect((await admin.get(`/api/panels/${w.panelId}/rows`)).status).toBe(200)
  })

  it('a request naming another tenant is refused with 403', async () => {
    const res = await w.alice.get(`/api/panels/${w.panelId}/rows?tenantId=tenant-b`)
    expect(res.status).toBe(403)
    expect(res.body.error).toBe('Access denied to tenant')
  })

  it('view rows: the owner; any user of the tenant once published; never another tenant', async () => {
    const id = await createView({ filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 40 }] })
    expect((await w.bob.get(`/api/views/${id}/rows`)).status).toBe(404)
    expect((await w.eve.get(`/api/views/${id}/rows`)).status).toBe(404)
    expect((await w.alice.post(`/api/views/${id}/publish`)).status).toBe(200)
    const bobs = await w.bob.get(`/api/views/${id}/rows`)
    expect(bobs.status).toBe(200)
    expect(idsOf(w, bobs.body)).toEqual(['p2', 'p3', 'p6'])
    const eves = await w.eve.get(`/api/views/${id}/rows`)
    expect(eves.status).toBe(404)
    expect(eves.body).toMatchObject({ error: 'View not found', code: 'NOT_FOUND' })
    expect((await w.alice.get('/api/views/99999/rows')).status).toBe(404)
  })

  it('needs a bearer token', async () => {
    const res = await w.t.app.request(`/api/panels/${w.panelId}/rows`)
    expect(res.status).toBe(401)
  })
})
