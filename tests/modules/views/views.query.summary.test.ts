import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'
import { clientFor } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'

/** The cached summary (total, groups, aggregations) of a row query never outlives a write. */

let server: FixtureServer
let patients = [
  { id: 'a', age: 30, ward: 'north' },
  { id: 'b', age: 50, ward: 'south' },
  { id: 'c', age: 70, ward: 'north' },
]

beforeAll(async () => {
  server = await startJsonServer((_req, res) => sendJson(res, 200, patients))
})
afterAll(() => server.close())

describe('row query summaries', () => {
  it('answer the new total, groups and aggregations after a sync, a column change and a cohort change', async () => {
    const t = await makeTestApp()
    const alice = clientFor(t.app, 'tenant-a', 'alice')
    const panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
    await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Age', sourceField: 'age', type: 'number' })
    const ward = await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Ward', sourceField: 'ward' })
    const source = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'api',
      config: { apiEndpoint: server.url, keyField: 'id' },
    })
    const view = await alice.post('/api/views', {
      name: 'Older',
      panelId,
      config: { columns: [], groupBy: ['Ward'], layout: 'table' },
      filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 40 }],
      aggregations: [{ columnTitle: 'Age', function: 'sum', alias: 'ages' }],
    })
    const summary = async () => {
      const res = await alice.get(`/api/views/${view.body.id}/rows?limit=1`)
      expect(res.status).toBe(200)
      return {
        total: res.body.meta.total,
        ages: res.body.aggregations.ages,
        groups: res.body.groups.map((g: { count: number }) => g.count),
      }
    }
    expect(await summary()).toEqual({ total: 2, ages: 120, groups: [1, 1] })
    expect(await summary()).toEqual({ total: 2, ages: 120, groups: [1, 1] })

    patients = [...patients, { id: 'd', age: 90, ward: 'south' }]
    expect((await alice.post(`/api/datasources/${source.body.id}/sync`)).body.syncStatus).toBe('success')
    expect(await summary()).toEqual({ total: 3, ages: 210, groups: [1, 2] })

    expect((await alice.put(`/api/columns/${ward.body.id}`, { sourceField: 'id', fhirPath: 'id' })).status).toBe(200)
    expect(await summary()).toEqual({ total: 3, ages: 210, groups: [1, 1, 1] })

    const rule = { conditions: [{ field: 'Age', operator: 'lessThan', value: 80 }], logic: 'AND' }
    expect((await alice.put(`/api/panels/${panelId}`, { cohortRule: rule })).status).toBe(200)
    expect(await summary()).toEqual({ total: 2, ages: 120, groups: [1, 1] })
  })
})
