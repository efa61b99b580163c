import { eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { changes, dataSources, notifications, views } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient
let panelId: number
let age: { id: number; name: string }

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Diabetes', tenantId: 'tenant-a', userId: 'alice' })).body.id
  age = (await base('Age', 'age')).body
})

const base = (name: string, sourceField: string) => alice.post(`/api/panels/${panelId}/columns/base`, { name, sourceField })
const calc = (name: string, formula: string) => alice.post(`/api/panels/${panelId}/columns/calculated`, { name, formula })
const put = (id: number, body: Record<string, unknown>, query = '') => alice.put(`/api/columns/${id}${query}`, body)
const list = async () => (await alice.get(`/api/panels/${panelId}/columns`)).body
const changesOf = (id: number) => t.deps.db.select().from(changes).where(eq(changes.entityId, id))
const columnChanges = async (id: number) => (await changesOf(id)).filter((c) => c.entityType === 'Column')

/** A view of `userId` on the panel (inserted directly: the views module is built in parallel). */
async function seedView(userId: string, columns: string[]) {
  const now = '2026-01-01T12:00:00.000Z'
  const [row] = await t.deps.db
    .insert(views)
    .values({
      tenantId: 'tenant-a',
      userId,
      panelId,
      name: `${userId}'s view`,
      config: { columns, groupBy: [], layout: 'table' },
      metadata: {},
      filters: [],
      sorting: [],
      columnVisibility: {},
      aggregations: [],
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return row.id
}

describe('PUT /api/columns/{id}', () => {
  it('updates name, type, properties and metadata of a base column and records the diff', async () => {
    t.clock.advance(60_000)
    const res = await put(age.id, { name: 'Age (years)', type: 'number', properties: { displaySettings: { width: 80 } } })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      id: age.id,
      columnType: 'base',
      name: 'Age (years)',
      type: 'number',
      sourceField: 'age',
      properties: { displaySettings: { width: 80 } },
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:01:00.000Z',
    })
    const update = (await columnChanges(age.id)).find((c) => c.action === 'UPDATE')
    expect(update?.changes).toEqual({
      name: { oldValue: 'Age', newValue: 'Age (years)' },
      type: { oldValue: 'text', newValue: 'number' },
      properties: { oldValue: {}, newValue: { displaySettings: { width: 80 } } },
    })
    expect((await list()).baseColumns[0].name).toBe('Age (years)')
  })

  it('moves both paths while they are equal, and only the one sent once they differ', async () => {
    const res = await put(age.id, { fhirPath: 'Patient.extension.age' })
    expect(res.body).toMatchObject({ fhirPath: 'Patient.extension.age', sourceField: 'Patient.extension.age' })
    const linked = await put(age.id, { sourceField: 'age_in_years' })
    expect(linked.body).toMatchObject({ fhirPath: 'age_in_years', sourceField: 'age_in_years' })
    const both = await put(age.id, { fhirPath: 'Patient.extension.age', sourceField: 'age_years' })
    expect(both.body).toMatchObject({ fhirPath: 'Patient.extension.age', sourceField: 'age_years' })
    const third = await put(age.id, { fhirPath: 'Patient.age' })
    expect(third.body).toMatchObject({ fhirPath: 'Patient.age', sourceField: 'age_years' })
    const none = await put(age.id, { fhirPath: null, sourceField: null })
    expect(none.status).toBe(400)
    expect(none.body.details[0].path).toBe('fhirPath')
  })

  it('sets and clears the data source, refusing one of another panel with 404', async () => {
    const now = '2026-01-01T12:00:00.000Z'
    const other = (await alice.post('/api/panels', { name: 'Other', tenantId: 'tenant-a', userId: 'alice' })).body.id
    const [own, foreign] = await t.deps.db
      .insert(dataSources)
      .values([
        { tenantId: 'tenant-a', userId: 'alice', panelId, type: 'file', config: {}, createdAt: now, updatedAt: now },
        { tenantId: 'tenant-a', userId: 'alice', panelId: other, type: 'file', config: {}, createdAt: now, updatedAt: now },
      ])
      .returning()
    expect((await put(age.id, { dataSourceId: own.id })).body.dataSourceId).toBe(own.id)
    const refused = await put(age.id, { dataSourceId: foreign.id })
    expect(refused.status).toBe(404)
    expect(refused.body.error).toBe('Data source not found')
    expect((await put(age.id, { dataSourceId: null })).body.dataSourceId).toBeNull()
  })

  it('updates a formula, re-deriving its dependencies', async () => {
    await base('Weight', 'weight')
    const double = (await calc('Double', '{Age} * 2')).body
    const res = await put(double.id, { formula: '{Weight} * 2' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ formula: '{Weight} * 2', dependencies: ['Weight'] })
    const update = (await columnChanges(double.id)).find((c) => c.action === 'UPDATE')
    expect(update?.changes).toEqual({
      formula: { oldValue: '{Age} * 2', newValue: '{Weight} * 2' },
      dependencies: { oldValue: ['Age'], newValue: ['Weight'] },
    })
  })

  it('re-checks a new formula: unknown references and mismatched dependencies are FORMULA_ERRORs', async () => {
    const double = (await calc('Double', '{Age} * 2')).body
    const unknown = await put(double.id, { formula: '{Agee} * 2' })
    expect(unknown.status).toBe(400)
    expect(unknown.body.details[0]).toMatchObject({ type: 'reference', suggestion: 'did you mean {Age}?' })
    const mismatch = await put(double.id, { dependencies: ['Patient.age'] })
    expect(mismatch.status).toBe(400)
    expect(mismatch.body.message).toContain('missing: {Age}')
    expect((await put(double.id, { dependencies: ['Age', 'Patient.age'] })).body.dependencies).toEqual(['Age', 'Patient.age'])
  })

  it('detects a cycle through two columns', async () => {
    const a = (await calc('A', '{Age} + 1')).body
    await calc('B', '{A} * 2')
    const res = await put(a.id, { formula: '{B} + 1' })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('FORMULA_ERROR')
    expect(res.body.details).toEqual([{ type: 'circular', message: 'Circular reference: {A} → {B} → {A}', position: 0 }])
    expect((await list()).calculatedColumns[0].formula).toBe('{Age} + 1')
  })

  it('detects a cycle through three columns', async () => {
    const a = (await calc('A', '{Age}')).body
    await calc('B', '{A} + 1')
    await calc('C', '{B} + 1')
    const res = await put(a.id, { formula: '{Age} + {C}' })
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual([{ type: 'circular', message: 'Circular reference: {A} → {C} → {B} → {A}', position: 8 }])
  })

  it('refuses fields of the other kind with 400, but accepts a calculated item sent back as read', async () => {
    const wrong = await put(age.id, { formula: '1' })
    expect(wrong.status).toBe(400)
    expect(wrong.body.details).toEqual([{ path: 'formula', message: 'a base column has no formula' }])
    const double = (await calc('Double', '{Age} * 2')).body
    expect((await put(double.id, { fhirPath: 'Patient.x' })).status).toBe(400)
    const echoed = await put(double.id, { ...double, name: 'Twice' })
    expect(echoed.status).toBe(200)
    expect(echoed.body).toMatchObject({ id: double.id, name: 'Twice', formula: '{Age} * 2', sourceField: null })
  })

  it('refuses a rename that other calculated columns depend on with 409 listing them', async () => {
    const double = (await calc('Double', '{Age} * 2')).body
    const label = (await calc('Label', '"Age: " & {Age}')).body
    const res = await put(age.id, { name: 'Years' })
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ code: 'CONFLICT', error: 'Conflict' })
    expect(res.body.details).toEqual([
      { id: double.id, name: 'Double' },
      { id: label.id, name: 'Label' },
    ])
    expect((await list()).baseColumns[0].name).toBe('Age')
  })

  it('renames with ?cascade=true, rewriting dependants in the same batch with a change each', async () => {
    const double = (await calc('Double', '{Age} * 2 & "{Age}"')).body
    const quad = (await calc('Quad', '{Double} * 2')).body
    const res = await put(age.id, { name: 'Years' }, '?cascade=true')
    expect(res.status).toBe(200)
    expect(res.body.name).toBe('Years')
    const { calculatedColumns } = await list()
    expect(calculatedColumns[0]).toMatchObject({ formula: '{Years} * 2 & "{Age}"', dependencies: ['Years'] })
    expect(calculatedColumns[1]).toMatchObject({ formula: '{Double} * 2', dependencies: ['Double'] })
    const rewritten = (await columnChanges(double.id)).find((c) => c.action === 'UPDATE')
    expect(rewritten?.changes).toEqual({
      formula: { oldValue: '{Age} * 2 & "{Age}"', newValue: '{Years} * 2 & "{Age}"' },
      dependencies: { oldValue: ['Age'], newValue: ['Years'] },
    })
    expect((await columnChanges(quad.id)).filter((c) => c.action === 'UPDATE')).toEqual([])
  })

  it('renames a calculated column that another one references, with cascade', async () => {
    const double = (await calc('Double', '{Age} * 2')).body
    await calc('Quad', '{Double} * 2')
    expect((await put(double.id, { name: 'Twice' })).status).toBe(409)
    expect((await put(double.id, { name: 'Twice' }, '?cascade=true')).status).toBe(200)
    expect((await list()).calculatedColumns[1]).toMatchObject({ formula: '{Twice} * 2', dependencies: ['Twice'] })
  })

  it('finds a cycle created by a rename with a new formula, through the rewritten dependants', async () => {
    const a = (await calc('A', '{Age}')).body
    await calc('B', '{A} + 1')
    const res = await put(a.id, { name: 'A2', formula: '{B}' }, '?cascade=true')
    expect(res.status).toBe(400)
    expect(res.body.details[0].message).toBe('Circular reference: {A2} → {B} → {A2}')
  })

  it('refuses renaming to a name the panel already has', async () => {
    await base('Weight', 'weight')
    const res = await put(age.id, { name: 'Weight' })
    expect(res.status).toBe(409)
  })

  it('answers 200 without a change record when nothing changes', async () => {
    const res = await put(age.id, { name: 'Age', sourceField: 'age' })
    expect(res.status).toBe(200)
    expect((await columnChanges(age.id)).map((c) => c.action)).toEqual(['CREATE'])
  })

  it('validates the body and the cascade flag', async () => {
    expect((await put(age.id, { name: '' })).status).toBe(400)
    expect((await put(age.id, { properties: { validation: { pattern: '*' } } })).body.details[0].path).toBe(
      'properties.validation.pattern',
    )
    const flag = await put(age.id, { name: 'X' }, '?cascade=yes')
    expect(flag.status).toBe(400)
    expect(flag.body.details[0].path).toBe('query.cascade')
    expect((await put(9999, { name: 'X' })).status).toBe(404)
  })

  it("warns the owners of other users' views on the panel, never the actor", async () => {
    const bobView = await seedView('bob', ['Age'])
    await seedView('alice', ['Age'])
    await put(age.id, { type: 'number' })
    const rows = await t.deps.db.select().from(notifications)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ userId: 'bob', viewId: bobView, type: 'COLUMN_CHANGED', impact: 'warning', isRead: false })
    expect(rows[0].message).toContain('Age')
  })
})

describe('DELETE /api/columns/{id}', () => {
  it('deletes a column: 204, gone from the list, DELETE change recorded', async () => {
    const res = await alice.delete(`/api/columns/${age.id}`)
    expect(res.status).toBe(204)
    expect(res.body).toBeNull()
    expect((await list()).baseColumns).toEqual([])
    const removed = (await columnChanges(age.id)).find((c) => c.action === 'DELETE')
    expect(removed).toMatchObject({ panelId, entityType: 'Column', userId: 'alice' })
    expect(removed?.changes).toMatchObject({ name: { oldValue: 'Age' }, columnType: { oldValue: 'base' } })
    expect((await alice.delete(`/api/columns/${age.id}`)).status).toBe(404)
  })

  it('refuses to delete a column calculated columns reference, listing them, until they are gone', async () => {
    const double = (await calc('Double', '{Age} * 2')).body
    const res = await alice.delete(`/api/columns/${age.id}`, { tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ code: 'CONFLICT', details: [{ id: double.id, name: 'Double' }] })
    expect((await list()).baseColumns).toHaveLength(1)
    expect((await alice.delete(`/api/columns/${double.id}`)).status).toBe(204)
    expect((await alice.delete(`/api/columns/${age.id}`)).status).toBe(204)
  })

  it('tells owners of views showing the column that the change is breaking, and only them', async () => {
    const showing = await seedView('bob', ['Age', 'Weight'])
    await seedView('bob', ['Weight'])
    await seedView('alice', ['Age'])
    expect((await alice.delete(`/api/columns/${age.id}`)).status).toBe(204)
    const rows = await t.deps.db.select().from(notifications)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ userId: 'bob', viewId: showing, type: 'COLUMN_CHANGED', impact: 'breaking' })
  })

  it('answers 400 for a non-integer id and 404 for an unknown one', async () => {
    expect((await alice.delete('/api/columns/abc')).status).toBe(400)
    const res = await alice.delete('/api/columns/9999')
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ error: 'Column not found', message: 'Column 9999 not found for tenant tenant-a' })
  })
})
