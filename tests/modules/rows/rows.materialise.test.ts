import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { dataSources, panels } from '../../../src/db/schema.ts'
import { loadPanelPlan, rowOf } from '../../../src/rowstore/materialise.ts'
import { recomputePanel } from '../../../src/rowstore/recompute.ts'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { waitFor } from '../datasources/fixtures.ts'

/** Cells are computed on write and after column changes (DATA-ENGINE: Rows). */

const PATIENTS = [
  { resourceType: 'Patient', id: 'a', name: [{ family: 'Lovelace', given: ['Ada'] }], birthDate: '1815-12-10', gender: 'female' },
  { resourceType: 'Patient', id: 'b', name: [{ family: 'Turing', given: ['Alan'] }], birthDate: '1912-06-23', gender: 'male' },
  { resourceType: 'Patient', id: 'c', name: [{ family: 'Hopper' }], birthDate: 'not a date', gender: 'female' },
]

let server: FixtureServer
let t: TestApp
let alice: TestClient
let panelId: number
/** Runs once while the source serves its next read, before it answers (a change racing a sync). */
let duringRead: (() => Promise<unknown>) | undefined

beforeAll(async () => {
  server = await startJsonServer(async (_req, res) => {
    const race = duringRead
    duringRead = undefined
    await race?.()
    sendJson(res, 200, PATIENTS)
  })
})
afterAll(() => server.close())

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Patients', tenantId: 'tenant-a', userId: 'alice' })).body.id
})

const addBase = (name: string, fhirPath: string, type = 'text', properties = {}) =>
  alice.post(`/api/panels/${panelId}/columns/base`, { name, fhirPath, type, properties })
const addSource = () => alice.post(`/api/panels/${panelId}/datasources`, { type: 'api', config: { apiEndpoint: server.url } })
const rows = async (sort = 'Family') =>
  (await alice.get(`/api/panels/${panelId}/rows?sort=${encodeURIComponent(sort)}&order=asc`)).body.data
const versions = async () =>
  (
    await t.deps.db.select({ c: panels.columnsVersion, m: panels.materialisedVersion }).from(panels).where(eq(panels.id, panelId))
  )[0]

describe('materialisation on write', () => {
  it('computes every cell as a sync writes the records, with per-cell errors', async () => {
    expect((await addBase('Family', 'Patient.name.family.first()')).status).toBe(201)
    expect((await addBase('Birth Date', 'Patient.birthDate', 'date')).status).toBe(201)
    const age = await alice.post(`/api/panels/${panelId}/columns/calculated`, {
      name: 'Born',
      formula: 'YEAR({Birth Date})',
      type: 'number',
    })
    expect(age.status).toBe(201)
    expect((await addSource()).body.syncStatus).toBe('success')
    const [hopper, lovelace, turing] = await rows()
    expect(lovelace).toMatchObject({ Family: 'Lovelace', 'Birth Date': '1815-12-10', Born: 1815 })
    expect(turing).toMatchObject({ Family: 'Turing', Born: 1912 })
    expect(hopper).toMatchObject({ Family: 'Hopper', 'Birth Date': null })
    expect(hopper._errors).toEqual([{ column: 'Birth Date', code: 'VALUE', message: '"not a date" is not a date' }])
  })
})

describe('recompute after column changes', () => {
  it('fills a column added after the data arrived, and marks the panel up to date', async () => {
    expect((await addSource()).body.syncStatus).toBe('success')
    expect((await addBase('Gender', 'Patient.gender')).status).toBe(201)
    expect((await rows('Gender')).map((r: { Gender: string }) => r.Gender)).toEqual(['female', 'female', 'male'])
    const v = await versions()
    expect(v.m).toBe(v.c)
  })

  it('rewrites the rows of a changed formula, and drops a deleted column from every row', async () => {
    await addBase('Family', 'Patient.name.family.first()')
    const initials = await alice.post(`/api/panels/${panelId}/columns/calculated`, {
      name: 'Initial',
      formula: 'LEFT({Family}, 1)',
    })
    await addSource()
    expect((await rows()).map((r: { Initial: string }) => r.Initial)).toEqual(['H', 'L', 'T'])
    expect((await alice.put(`/api/columns/${initials.body.id}`, { formula: 'LOWER(LEFT({Family}, 2))' })).status).toBe(200)
    expect((await rows()).map((r: { Initial: string }) => r.Initial)).toEqual(['ho', 'lo', 'tu'])
    expect((await alice.delete(`/api/columns/${initials.body.id}`)).status).toBe(204)
    expect((await rows()).every((r: Record<string, unknown>) => !('Initial' in r))).toBe(true)
  })

  it('writes only the rows whose cells changed', async () => {
    await addBase('Gender', 'Patient.gender')
    const flag = await alice.post(`/api/panels/${panelId}/columns/calculated`, {
      name: 'Male',
      formula: '{Gender} = "male"',
      type: 'boolean',
    })
    await addSource()
    await alice.put(`/api/columns/${flag.body.id}`, { formula: '{Gender} = "female"' })
    // Same results again: no row changes, the panel is still marked up to date.
    await t.deps.db
      .update(panels)
      .set({ columnsVersion: (await versions()).c + 1 })
      .where(eq(panels.id, panelId))
    expect(await recomputePanel(t.deps.db, 'tenant-a', panelId, () => t.clock.now())).toBe(0)
    const v = await versions()
    expect(v.m).toBe(v.c)
  })

  it('leaves a stale panel to the scheduler step, which brings it up to date', async () => {
    await addSource()
    await addBase('Gender', 'Patient.gender')
    await t.deps.db.update(panels).set({ materialisedVersion: 0 }).where(eq(panels.id, panelId))
    await t.client.execute({ sql: 'UPDATE records SET cells = ? WHERE panel_id = ?', args: ['{}', panelId] })
    const report = await runMaintenanceTick(t.deps)
    expect(report.recomputed).toBe(3)
    expect((await rows('Gender')).map((r: { Gender: string }) => r.Gender)).toEqual(['female', 'female', 'male'])
  })

  it('never reads records of another tenant while recomputing', async () => {
    await addSource()
    await addBase('Gender', 'Patient.gender')
    expect(await recomputePanel(t.deps.db, 'tenant-b', panelId, () => t.clock.now())).toBe(0)
  })
})

describe('a column added while a sync reads', () => {
  const genders = async (): Promise<unknown[]> => (await rows('Family')).map((r: { Gender?: string }) => r.Gender)
  const addGenderDuringRead = () => {
    duringRead = () => addBase('Gender', 'Patient.gender')
  }

  it('is computed on the rows the sync wrote with the columns before it, once a sync of the route ends', async () => {
    await addBase('Family', 'Patient.name.family.first()')
    const source = (await addSource()).body
    addGenderDuringRead()
    const synced = await alice.post(`/api/datasources/${source.id}/sync`, {})
    expect(synced.body.status).toBe('success')
    expect(await genders()).toEqual(['female', 'female', 'male'])
  })

  it('is computed likewise after a sync in the background', async () => {
    await addBase('Family', 'Patient.name.family.first()')
    const source = (await addSource()).body
    addGenderDuringRead()
    expect((await alice.post(`/api/datasources/${source.id}/sync?async=true`, {})).status).toBe(202)
    const after = await waitFor(async () => {
      const now = await genders()
      return now.every((g) => typeof g === 'string') ? now : undefined
    })
    expect(after).toEqual(['female', 'female', 'male'])
  })

  it('is computed likewise after a scheduled sync', async () => {
    await addBase('Family', 'Patient.name.family.first()')
    const source = (await addSource()).body
    await t.deps.db.update(dataSources).set({ nextSyncAt: '2000-01-01T00:00:00.000Z' }).where(eq(dataSources.id, source.id))
    addGenderDuringRead()
    expect((await runMaintenanceTick(t.deps)).succeeded).toBe(1)
    expect(await genders()).toEqual(['female', 'female', 'male'])
  })
})

describe('rowOf', () => {
  it('reads import records by column name', async () => {
    await addBase('Gender', 'Patient.gender')
    const plan = await loadPanelPlan(t.deps.db, 'tenant-a', panelId)
    plan.importSources.add(99)
    const [gender] = Object.keys(rowOf(plan, 1, PATIENTS[0], t.clock.now()).cells)
    expect(rowOf(plan, 1, PATIENTS[0], t.clock.now()).cells[gender]).toBe('female')
    expect(rowOf(plan, 99, { Gender: 'other' }, t.clock.now()).cells[gender]).toBe('other')
  })
})
