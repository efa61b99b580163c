import { sql } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { deliverSigned, GIVEN_NAMES_VIEW } from '../../helpers/view-definitions.ts'

/**
 * Membership over the rows of a panel defined by a ViewDefinition (several rows per record, keyed
 * by record and position): a webhook delivery that drops a given name moves that row out of the
 * view and leaves the record's other rows where they were.
 */

const SECRET = 'whsec-feed-0123456789'
let t: TestApp
let alice: TestClient
let panelId: number
let viewId: number

async function deliver(id: string, event: string, data: unknown[]) {
  expect((await deliverSigned(t.app, 'feed-fhir', SECRET, { id, event, data })).status).toBe(200)
}

const rowEvents = async (after: number) =>
  (
    await t.deps.db.all<{ seq: number; type: string; data: string }>(
      sql`SELECT seq, type, data FROM events WHERE tenant_id = 'tenant-a' AND seq > ${after} AND type LIKE 'row.%' ORDER BY seq`,
    )
  ).map((e) => [e.type, JSON.parse(e.data).key, JSON.parse(e.data).row.given])
const head = async () => Number((await t.deps.db.all<{ n: number }>(sql`SELECT coalesce(max(seq), 0) AS n FROM events`))[0].n)

beforeAll(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Pushed', tenantId: 'tenant-a', userId: 'alice' })).body.id
  const source = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'webhook',
    config: { endpoint: 'feed-fhir', secret: SECRET, events: ['data.created', 'data.updated', 'data.deleted'] },
  })
  expect(source.status).toBe(201)
  expect((await alice.put(`/api/panels/${panelId}/viewdefinition`, { viewResource: GIVEN_NAMES_VIEW })).status).toBe(200)
  viewId = (
    await alice.post('/api/views', {
      name: 'Smiths',
      panelId,
      filters: [{ columnTitle: 'family', operator: 'equals', value: 'Smith' }],
    })
  ).body.id
})

describe('view membership over a ViewDefinition panel', () => {
  it('moves each view row of a record on its own', async () => {
    let mark = await head()
    await deliver('e1', 'data.created', [
      {
        resourceType: 'Patient',
        id: 'p1',
        name: [
          { family: 'Smith', given: ['Ada', 'Q.'] },
          { family: 'Jones', given: ['Ada'] },
        ],
      },
    ])
    expect(await rowEvents(mark)).toEqual([
      ['row.entered', 'p1#name[0].given[0]', 'Ada'],
      ['row.entered', 'p1#name[0].given[1]', 'Q.'],
    ])
    mark = await head()
    await deliver('e2', 'data.updated', [
      {
        resourceType: 'Patient',
        id: 'p1',
        name: [
          { family: 'Smith', given: ['Ada'] },
          { family: 'Jones', given: ['Ada'] },
        ],
      },
    ])
    expect(await rowEvents(mark)).toEqual([['row.left', 'p1#name[0].given[1]', 'Q.']])
    mark = await head()
    await deliver('e3', 'data.deleted', [{ resourceType: 'Patient', id: 'p1' }])
    expect(await rowEvents(mark)).toEqual([['row.left', 'p1#name[0].given[0]', 'Ada']])
    expect(await t.deps.db.all(sql`SELECT key FROM view_members WHERE view_id = ${viewId}`)).toEqual([])
  })
})
