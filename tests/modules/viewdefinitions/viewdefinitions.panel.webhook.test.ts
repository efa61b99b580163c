import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { deliverSigned, GIVEN_NAMES_VIEW } from '../../helpers/view-definitions.ts'

/**
 * A panel defined by a ViewDefinition over a webhook source (docs/sql-on-fhir.md, "Panels defined
 * by a ViewDefinition"): deliveries are expanded like syncs, an update that drops a name drops its
 * rows, a delete by key deletes every row of the record, and a replaced view is re-expanded from
 * the stored resources, which no sync could read again.
 */

const SECRET = 'whsec-view-0123456789'
let t: TestApp
let alice: TestClient
let panelId: number

const GIVEN_NAMES = GIVEN_NAMES_VIEW

async function deliver(body: unknown) {
  expect((await deliverSigned(t.app, 'ehr-fhir', SECRET, body)).status).toBe(200)
}

const keys = async () =>
  (
    await t.client.execute({
      sql: `SELECT r.key FROM records r JOIN data_sources s ON s.id = r.data_source_id
            WHERE r.panel_id = ? AND r.generation = s.current_generation ORDER BY r.key`,
      args: [panelId],
    })
  ).rows.map((r) => String(r.key))

beforeAll(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Pushed patients', tenantId: 'tenant-a', userId: 'alice' })).body.id
  const source = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'webhook',
    config: { endpoint: 'ehr-fhir', secret: SECRET, events: ['data.created', 'data.updated', 'data.deleted'] },
  })
  expect(source.status).toBe(201)
  expect((await alice.put(`/api/panels/${panelId}/viewdefinition`, { viewResource: GIVEN_NAMES })).status).toBe(200)
})

describe('a panel defined by a view over a webhook source', () => {
  it('expands delivered resources into rows, one per given name', async () => {
    await deliver({
      id: 'evt-1',
      event: 'data.created',
      data: [
        {
          resourceType: 'Patient',
          id: 'p1',
          name: [
            { family: 'Smith', given: ['Ada', 'Q.'] },
            { family: 'Jones', given: ['Ada'] },
          ],
        },
        { resourceType: 'Patient', id: 'p2', name: [{ family: 'Brown', given: ['Grace'] }] },
      ],
    })
    expect(await keys()).toEqual(['p1#name[0].given[0]', 'p1#name[0].given[1]', 'p1#name[1].given[0]', 'p2#name[0].given[0]'])
  })

  it("drops the rows of a name an update removes, keeping the other rows' ids", async () => {
    const [{ _id: kept }] = (
      await alice.get(
        `/api/panels/${panelId}/rows?filters=${encodeURIComponent(
          JSON.stringify([{ columnTitle: 'given', operator: 'equals', value: 'Grace' }]),
        )}`,
      )
    ).body.data
    await deliver({
      id: 'evt-2',
      event: 'data.updated',
      data: { resourceType: 'Patient', id: 'p1', name: [{ family: 'Smith', given: ['Ada'] }] },
    })
    expect(await keys()).toEqual(['p1#name[0].given[0]', 'p2#name[0].given[0]'])
    const rows = (await alice.get(`/api/panels/${panelId}/rows?sort=given`)).body.data
    expect(rows.map((r: Record<string, unknown>) => [r.id, r.family, r.given])).toEqual([
      ['p1', 'Smith', 'Ada'],
      ['p2', 'Brown', 'Grace'],
    ])
    expect(rows[1]._id).toBe(kept)
  })

  it('re-expands the stored resources when the view is replaced, without a delivery', async () => {
    const families = {
      resourceType: 'ViewDefinition',
      resource: 'Patient',
      select: [{ column: [{ name: 'id', path: 'id' }] }, { forEach: 'name.given', column: [{ name: 'given', path: '$this' }] }],
    }
    expect((await alice.put(`/api/panels/${panelId}/viewdefinition`, { viewResource: families })).status).toBe(200)
    expect(await keys()).toEqual(['p1#name[0].given[0]', 'p2#name[0].given[0]'])
    const rows = (await alice.get(`/api/panels/${panelId}/rows?sort=given`)).body.data
    expect(rows.map((r: Record<string, unknown>) => [r.id, r.given, r.family])).toEqual([
      ['p1', 'Ada', undefined],
      ['p2', 'Grace', undefined],
    ])
  })

  it('deletes every row of a record deleted by key', async () => {
    await deliver({
      id: 'evt-3',
      event: 'data.updated',
      data: { resourceType: 'Patient', id: 'p2', name: [{ given: ['Grace', 'Brewster'] }] },
    })
    expect(await keys()).toEqual(['p1#name[0].given[0]', 'p2#name[0].given[0]', 'p2#name[0].given[1]'])
    await deliver({ id: 'evt-4', event: 'data.deleted', data: { id: 'p2' } })
    expect(await keys()).toEqual(['p1#name[0].given[0]'])
  })
})
