import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Patient lists as FHIR Group (docs/fhir.md "Patient lists"): search, read and $getpage over the
 * views a caller may read, with the sharing rules, the view password and the read audit of /api.
 */

/** Keys `Patient/<id>` for most rows; two rows whose key names no patient. */
const PATIENTS = [
  { id: 'Patient/a1', name: 'Ada', age: 36, pid: 'x1' },
  { id: 'Patient/a2', name: 'Grace', age: 45, pid: '' },
  { id: 'enc-3', name: 'Alan', age: 41, pid: 'Patient/x3' },
  { id: 'enc-4', name: 'Linus', age: 52, pid: 'not a patient id' },
  { id: 'Patient/a5', name: 'Zoe', age: 29, pid: 77 },
  { id: 'enc-6', name: 'Bob', age: 67 },
]

let w: RowsWorld
let nina: TestClient
let nurse: TestClient
let diabetesId: number
let cardioId: number

const fhirHeaders = { Accept: 'application/fhir+json' }

async function view(client: TestClient, body: Record<string, unknown>) {
  const res = await client.post('/api/views', { panelId: w.panelId, config: { columns: ['Name', 'Age'] }, ...body })
  if (res.status !== 201) throw new Error(`view failed: ${JSON.stringify(res.body)}`)
  return res.body.id as number
}

async function publish(id: number, publishConfig: Record<string, unknown>) {
  const res = await w.alice.post(`/api/views/${id}/publish`, { publishConfig })
  if (res.status !== 200) throw new Error(`publish failed: ${JSON.stringify(res.body)}`)
}

const references = (group: { member?: { entity: { reference: string } }[] }) =>
  (group.member ?? []).map((m) => m.entity.reference)
const withoutPatient = (group: { extension?: { url: string; extension?: { url: string; valueString?: string }[] }[] }) =>
  (group.extension ?? [])
    .filter((e) => e.url.endsWith('/fhir/StructureDefinition/row-without-patient'))
    .map((e) => e.extension?.find((x) => x.url === 'key')?.valueString)

/** The `$getpage` URL of the next or previous page a Group names in its extensions. */
const pageLink = (group: { extension?: { url: string; valueUrl?: string }[] }, which: 'next' | 'previous') =>
  group.extension?.find((e) => e.url.endsWith(`/fhir/StructureDefinition/members-${which}-page`))?.valueUrl

async function accessRecords() {
  const res = await w.t.client.execute('SELECT * FROM access_records ORDER BY id')
  return res.rows.map((r) => ({
    userId: r.user_id,
    viewId: r.view_id === null ? null : Number(r.view_id),
    rowCount: Number(r.row_count),
    path: r.path,
    outcome: r.outcome,
    status: Number(r.status),
  }))
}

beforeAll(async () => {
  w = await rowsWorld(PATIENTS)
  const res = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name: 'PatientId', sourceField: 'pid', type: 'text' })
  if (res.status !== 201) throw new Error(`column failed: ${JSON.stringify(res.body)}`)
  nina = clientFor(w.t.app, 'tenant-a', 'nina')
  nurse = clientFor(w.t.app, 'tenant-a', 'nora', { groups: ['nurses'] })
  // Oldest first: Zoe (29) is left out, Bob (67) comes last.
  diabetesId = await view(w.alice, {
    name: 'Diabetes follow-up',
    filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
    sorting: [{ columnTitle: 'Age', direction: 'asc' }],
  })
  cardioId = await view(w.alice, { name: 'Cardiology review' })
})

afterAll(async () => {
  await w?.server.close()
})

describe('GET /fhir/Group', () => {
  it('lists the caller’s views as Groups in a searchset Bundle, without members', async () => {
    const res = await w.alice.get('/fhir/Group', fhirHeaders)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 2 })
    const groups = res.body.entry.map((e: { resource: unknown }) => e.resource)
    expect(groups).toEqual([
      expect.objectContaining({
        resourceType: 'Group',
        id: String(diabetesId),
        type: 'person',
        actual: true,
        name: 'Diabetes follow-up',
        quantity: 5,
      }),
      expect.objectContaining({ id: String(cardioId), name: 'Cardiology review', quantity: 6 }),
    ])
    for (const g of groups) {
      expect(g.member).toBeUndefined()
      expect(g.meta.tag[0].code).toBe('SUBSETTED')
    }
    expect(res.body.entry[0].fullUrl).toMatch(new RegExp(`/fhir/Group/${diabetesId}$`))
    expect(res.body.entry[0].search).toEqual({ mode: 'match' })
  })

  it('matches name as FHIR strings do: starts-with without case or accents, :exact, :contains, commas OR', async () => {
    const names = async (q: string) =>
      ((await w.alice.get(`/fhir/Group?${q}`)).body.entry ?? []).map((e: { resource: { name: string } }) => e.resource.name)
    expect(await names('name=diab')).toEqual(['Diabetes follow-up'])
    expect(await names('name=DIÁB')).toEqual(['Diabetes follow-up'])
    expect(await names('name=follow')).toEqual([])
    expect(await names('name:contains=FOLLOW')).toEqual(['Diabetes follow-up'])
    expect(await names('name:exact=diabetes%20follow-up')).toEqual([])
    expect(await names('name:exact=Diabetes%20follow-up')).toEqual(['Diabetes follow-up'])
    expect(await names('name=card,diab')).toEqual(['Diabetes follow-up', 'Cardiology review'])
    expect(await names('name=card&name:contains=review')).toEqual(['Cardiology review'])
  })

  it('answers the Argonaut discovery search, type=person with _summary=true; other types match nothing', async () => {
    const found = await w.alice.get('/fhir/Group?_summary=true&type=person')
    expect(found.body.total).toBe(2)
    expect((await w.alice.get('/fhir/Group?type=http://hl7.org/fhir/group-type|person')).body.total).toBe(2)
    expect((await w.alice.get('/fhir/Group?type=device,person')).body.total).toBe(2)
    const none = await w.alice.get('/fhir/Group?type=medication')
    expect(none.status).toBe(200)
    expect(none.body.total).toBe(0)
    expect(none.body.entry).toBeUndefined()
  })

  it('counts only with _summary=count, and answers _summary=true as the default form', async () => {
    const count = await w.alice.get('/fhir/Group?_summary=count')
    expect(count.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 2 })
    expect(count.body.entry).toBeUndefined()
    const summary = await w.alice.get('/fhir/Group?_summary=true')
    expect(summary.body.entry).toHaveLength(2)
    const refused = await w.alice.get('/fhir/Group?_summary=false')
    expect(refused.status).toBe(400)
    expect(refused.body.resourceType).toBe('OperationOutcome')
    expect(refused.body.issue[0].expression).toEqual(['_summary'])
  })

  it('pages with _count and _offset, with self, next and previous links', async () => {
    const first = await w.alice.get('/fhir/Group?_count=1')
    expect(first.body.total).toBe(2)
    expect(first.body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([String(diabetesId)])
    const link = (body: { link: { relation: string; url: string }[] }, relation: string) =>
      body.link.find((l) => l.relation === relation)?.url
    expect(link(first.body, 'previous')).toBeUndefined()
    const next = new URL(link(first.body, 'next') as string)
    expect(next.pathname).toBe('/fhir/Group')
    expect(next.searchParams.get('_offset')).toBe('1')
    const second = await w.alice.get(`${next.pathname}${next.search}`)
    expect(second.body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([String(cardioId)])
    expect(link(second.body, 'next')).toBeUndefined()
    expect(new URL(link(second.body, 'previous') as string).searchParams.get('_offset')).toBe('0')
    expect((await w.alice.get('/fhir/Group?_count=5000')).body.entry).toHaveLength(2)
    for (const bad of ['_count=-1', '_count=many', '_offset=x']) {
      const res = await w.alice.get(`/fhir/Group?${bad}`)
      expect(res.status).toBe(400)
      expect(res.body.issue[0].code).toBe('invalid')
    }
  })

  it('ignores unknown parameters (lenient, left out of self) and refuses them under Prefer: handling=strict', async () => {
    const lenient = await w.alice.get('/fhir/Group?name=diab&colour=blue')
    expect(lenient.status).toBe(200)
    expect(lenient.body.total).toBe(1)
    const self = new URL(lenient.body.link[0].url)
    expect(self.searchParams.get('name')).toBe('diab')
    expect(self.searchParams.has('colour')).toBe(false)
    const strict = await w.alice.get('/fhir/Group?name=diab&colour=blue', { Prefer: 'handling=strict' })
    expect(strict.status).toBe(400)
    expect(strict.body.resourceType).toBe('OperationOutcome')
    expect(strict.body.issue.map((i: { expression: string[] }) => i.expression[0])).toEqual(['colour'])
    expect((await w.alice.get('/fhir/Group?name=diab', { Prefer: 'handling=strict' })).status).toBe(200)
  })

  it('lists only what the caller may read: nothing of another tenant, published views by their sharing rules', async () => {
    expect((await w.eve.get('/fhir/Group')).body).toMatchObject({ total: 0 })
    expect((await w.bob.get('/fhir/Group')).body.total).toBe(0)
    const shared = await view(w.alice, { name: 'Nurses list' })
    await publish(shared, { permissions: ['read'], userGroups: ['nurses'] })
    expect((await w.bob.get('/fhir/Group')).body.total).toBe(0)
    const listed = await nurse.get('/fhir/Group')
    expect(listed.body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([String(shared)])
    await publish(shared, { permissions: ['read'], userGroups: [], expiresAt: '2026-01-01T12:30:00.000Z' })
    expect((await w.bob.get('/fhir/Group')).body.total).toBe(1)
    w.t.clock.advance(60 * 60_000)
    expect((await w.bob.get('/fhir/Group')).body.total).toBe(0)
    expect((await w.bob.get(`/fhir/Group/${shared}`)).status).toBe(404)
    await w.alice.delete(`/api/views/${shared}`)
  })
})

describe('GET /fhir/Group/{id}', () => {
  it('answers the members in the view’s order: the patient column, else a Patient/<id> key; other rows under the extension', async () => {
    // No patient column yet: only the keys name patients.
    const before = await w.alice.get(`/fhir/Group/${diabetesId}`)
    expect(before.status).toBe(200)
    expect(before.headers.get('content-type')).toBe('application/fhir+json')
    expect(before.body).toMatchObject({
      resourceType: 'Group',
      id: String(diabetesId),
      type: 'person',
      actual: true,
      quantity: 5,
    })
    // Age order: Ada 36, Alan 41, Grace 45, Linus 52, Bob 67.
    expect(references(before.body)).toEqual(['Patient/a1', 'Patient/a2'])
    expect(withoutPatient(before.body)).toEqual(['enc-3', 'enc-4', 'enc-6'])
    const workflow = await w.alice.put(`/api/panels/${w.panelId}/workflow`, {
      statuses: [{ value: 'open', label: 'Open', done: false }],
      sla: null,
      claimLeaseSeconds: null,
      patientReference: 'PatientId',
    })
    expect(workflow.status).toBe(200)
    const after = await w.alice.get(`/fhir/Group/${diabetesId}`)
    // Ada: bare id x1; Alan: Patient/x3 as given; Grace: blank cell, her key; Linus: a value that is no id; Bob: no cell, no patient key.
    expect(references(after.body)).toEqual(['Patient/x1', 'Patient/x3', 'Patient/a2'])
    expect(withoutPatient(after.body)).toEqual(['enc-4', 'enc-6'])
    expect(after.body.quantity).toBe(5)
    const all = await w.alice.get(`/fhir/Group/${cardioId}`)
    expect(all.body.quantity).toBe(6)
    expect((all.body.member?.length ?? 0) + withoutPatient(all.body).length).toBe(6)
    expect(references(all.body)).toContain('Patient/77')
  })

  it('is a 404 OperationOutcome for another tenant, an unpublished view of someone else, and ids that are no view', async () => {
    for (const [client, path] of [
      [w.eve, `/fhir/Group/${diabetesId}`],
      [w.bob, `/fhir/Group/${diabetesId}`],
      [w.alice, '/fhir/Group/999999'],
      [w.alice, '/fhir/Group/abc'],
      [w.eve, `/fhir/Group/${diabetesId}/$getpage?offset=0&count=2`],
    ] as const) {
      const res = await client.get(path)
      expect(res.status, path).toBe(404)
      expect(res.headers.get('content-type')).toBe('application/fhir+json')
      expect(res.body.resourceType).toBe('OperationOutcome')
      expect(res.body.issue[0].code).toBe('not-found')
    }
    const eve = await w.eve.post(`/fhir/Group/${diabetesId}/$getpage`, { resourceType: 'Parameters', parameter: [] })
    expect(eve.status).toBe(404)
  })

  it('follows the view’s sharing: read permission, groups', async () => {
    const shared = await view(w.alice, { name: 'Shared to nurses' })
    await publish(shared, { permissions: ['read'], userGroups: ['nurses'] })
    expect((await w.bob.get(`/fhir/Group/${shared}`)).status).toBe(404)
    const read = await nurse.get(`/fhir/Group/${shared}`)
    expect(read.status).toBe(200)
    expect(read.body.quantity).toBe(6)
    await publish(shared, { permissions: ['edit'], userGroups: [] })
    const denied = await w.bob.get(`/fhir/Group/${shared}`)
    expect(denied.status).toBe(403)
    expect(denied.body.issue[0].code).toBe('forbidden')
    await w.alice.delete(`/api/views/${shared}`)
  })

  it('asks for a protected view’s password in X-View-Password, counting failures with /api', async () => {
    const locked = await view(w.alice, { name: 'Locked list' })
    await publish(locked, { permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' })
    const none = await nina.get(`/fhir/Group/${locked}`)
    expect(none.status).toBe(403)
    expect(none.body.issue[0].details.coding[0].code).toBe('VIEW_PASSWORD_REQUIRED')
    const wrong = await nina.get(`/fhir/Group/${locked}`, { 'X-View-Password': 'wrong horse' })
    expect(wrong.status).toBe(403)
    expect(wrong.body.issue[0].details.coding[0].code).toBe('VIEW_PASSWORD_INVALID')
    const right = await nina.get(`/fhir/Group/${locked}`, { 'X-View-Password': 'correct horse' })
    expect(right.status).toBe(200)
    expect(right.body.quantity).toBe(6)
    // Listing needs no password, as on /api.
    expect((await nina.get('/fhir/Group')).body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toContain(
      String(locked),
    )
    for (let i = 0; i < 4; i++) await nina.get(`/fhir/Group/${locked}/$getpage`, { 'X-View-Password': `guess ${i}` })
    // Five wrong ones through the FHIR face lock the view for nina on /api too.
    const api = await nina.get(`/api/views/${locked}/rows`, { 'X-View-Password': 'correct horse' })
    expect(api.status).toBe(429)
    const fhir = await nina.get(`/fhir/Group/${locked}`, { 'X-View-Password': 'correct horse' })
    expect(fhir.status).toBe(429)
    expect(fhir.body.issue[0].code).toBe('throttled')
    await w.alice.delete(`/api/views/${locked}`)
  })

  it('records each read in the read audit, refusals included', async () => {
    await w.t.client.execute('DELETE FROM access_records')
    expect((await w.alice.get(`/fhir/Group/${diabetesId}`)).status).toBe(200)
    expect((await w.alice.get(`/fhir/Group/${diabetesId}/$getpage?offset=1&count=2`)).status).toBe(200)
    expect((await w.eve.get(`/fhir/Group/${diabetesId}`)).status).toBe(404)
    expect((await w.alice.get('/fhir/Group')).status).toBe(200)
    expect(await accessRecords()).toEqual([
      { userId: 'alice', viewId: diabetesId, rowCount: 5, path: `/fhir/Group/${diabetesId}`, outcome: 'success', status: 200 },
      {
        userId: 'alice',
        viewId: diabetesId,
        rowCount: 2,
        path: `/fhir/Group/${diabetesId}/$getpage`,
        outcome: 'success',
        status: 200,
      },
      { userId: 'eve', viewId: null, rowCount: 0, path: `/fhir/Group/${diabetesId}`, outcome: 'not_found', status: 404 },
    ])
  })
})

describe('GET|POST /fhir/Group/{id}/$getpage', () => {
  it('answers the Group with a page of its members, SUBSETTED, the pages around it as extensions', async () => {
    const res = await w.alice.get(`/fhir/Group/${cardioId}/$getpage?offset=0&count=4`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    const page = res.body
    expect(page).toMatchObject({ resourceType: 'Group', id: String(cardioId), type: 'person', actual: true, quantity: 6 })
    expect(page.meta.tag).toEqual([expect.objectContaining({ code: 'SUBSETTED' })])
    expect((page.member?.length ?? 0) + withoutPatient(page).length).toBe(4)
    expect(pageLink(page, 'previous')).toBeUndefined()
    const next = pageLink(page, 'next') as string
    expect(next).toMatch(new RegExp(`/fhir/Group/${cardioId}/\\$getpage\\?offset=4&count=4$`))
    const last = (await w.alice.get(new URL(next).pathname + new URL(next).search)).body
    expect((last.member?.length ?? 0) + withoutPatient(last).length).toBe(2)
    expect(pageLink(last, 'next')).toBeUndefined()
    expect(pageLink(last, 'previous')).toMatch(/\$getpage\?offset=0&count=4$/)
    // The pages together are the read's rows, in its order.
    const whole = (await w.alice.get(`/fhir/Group/${cardioId}`)).body
    expect(whole.meta.tag).toBeUndefined()
    expect([...references(page), ...references(last)]).toEqual(references(whole))
    expect([...withoutPatient(page), ...withoutPatient(last)]).toEqual(withoutPatient(whole))
    // A page that holds the whole list is no subset.
    const all = (await w.alice.get(`/fhir/Group/${cardioId}/$getpage`)).body
    expect(all.meta.tag).toBeUndefined()
    expect(references(all)).toEqual(references(whole))
  })

  it('takes offset and count from a Parameters body on POST', async () => {
    const res = await w.alice.post(
      `/fhir/Group/${diabetesId}/$getpage`,
      {
        resourceType: 'Parameters',
        parameter: [
          { name: 'offset', valueInteger: 1 },
          { name: 'count', valueInteger: 1 },
        ],
      },
      { 'Content-Type': 'application/fhir+json' },
    )
    expect(res.status).toBe(200)
    expect(res.body.member).toEqual([{ entity: { reference: 'Patient/x3' } }])
    expect(pageLink(res.body, 'next')).toMatch(/offset=2&count=1$/)
    expect(pageLink(res.body, 'previous')).toMatch(/offset=0&count=1$/)
  })

  it('refuses a count or offset out of range with a 400 OperationOutcome', async () => {
    for (const q of ['count=0', 'count=10001', 'offset=-1', 'count=ten']) {
      const res = await w.alice.get(`/fhir/Group/${diabetesId}/$getpage?${q}`)
      expect(res.status, q).toBe(400)
      expect(res.body.resourceType).toBe('OperationOutcome')
    }
    const body = await w.alice.post(`/fhir/Group/${diabetesId}/$getpage`, { resourceType: 'Bundle' })
    expect(body.status).toBe(400)
  })
})

describe('the CapabilityStatement', () => {
  it('lists Group with read, search-type, its search parameters and $getpage', async () => {
    const res = await w.t.app.request('/fhir/metadata')
    const cs = await res.json()
    const group = cs.rest[0].resource.find((r: { type: string }) => r.type === 'Group')
    expect(group.interaction.map((i: { code: string }) => i.code).sort()).toEqual(['read', 'search-type'])
    expect(group.searchParam.map((p: { name: string }) => p.name)).toEqual(['name', 'type', '_summary', '_count', '_offset'])
    expect(group.operation).toEqual([
      expect.objectContaining({
        name: 'getpage',
        definition: 'http://www.fhir.org/guides/argonaut/patient-list/OperationDefinition/getpage',
      }),
    ])
  })
})
