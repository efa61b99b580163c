import { eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { panels } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

/**
 * The columns routes leave alone a base column that the panel's stored ViewDefinition defines
 * (those change with PUT /api/panels/{id}/viewdefinition). The view is stored directly here, so
 * only the columns module's own guard is under test.
 */

let t: TestApp
let alice: TestClient
let panelId: number

const VIEW = {
  resourceType: 'ViewDefinition',
  resource: 'Patient',
  status: 'active',
  select: [{ column: [{ name: 'family', path: 'name.family', type: 'string' }] }],
}

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Patients', tenantId: 'tenant-a', userId: 'alice' })).body.id
})

const base = async (name: string) =>
  (await alice.post(`/api/panels/${panelId}/columns/base`, { name, sourceField: name })).body as { id: number }
const storeView = (definition: Record<string, unknown>) =>
  t.deps.db.update(panels).set({ viewDefinition: definition }).where(eq(panels.id, panelId))

describe('a base column the panel view defines', () => {
  it("is refused with 409 on update and delete; the panel's other columns still change", async () => {
    const family = await base('family')
    const note = await base('note')
    await storeView(VIEW)

    const put = await alice.put(`/api/columns/${family.id}`, { sourceField: 'surname' })
    expect(put.status).toBe(409)
    expect(put.body.code).toBe('CONFLICT')
    expect(put.body.message).toBe(
      `Column "family" is defined by the panel's ViewDefinition: change it with PUT /api/panels/${panelId}/viewdefinition`,
    )
    expect((await alice.delete(`/api/columns/${family.id}`)).status).toBe(409)

    expect((await alice.put(`/api/columns/${note.id}`, { sourceField: 'remark' })).status).toBe(200)
    expect((await alice.delete(`/api/columns/${note.id}`)).status).toBe(204)
  })

  it('changes freely while the panel has no view', async () => {
    const family = await base('family')
    expect((await alice.put(`/api/columns/${family.id}`, { sourceField: 'surname' })).status).toBe(200)
  })

  it('answers 400 INVALID_VIEW_DEFINITION naming the place when the stored view no longer compiles', async () => {
    const family = await base('family')
    await storeView({ ...VIEW, select: [{ column: [{ name: 'family', path: 'name.where(' }] }] })
    const res = await alice.put(`/api/columns/${family.id}`, { sourceField: 'surname' })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('INVALID_VIEW_DEFINITION')
    expect(res.body.message).toBe('The ViewDefinition is invalid')
    expect(res.body.details).toEqual([expect.objectContaining({ path: 'select[0].column[0].path' })])
  })
})
