import { and, eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { changes, dataSources } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Diabetes', tenantId: 'tenant-a', userId: 'alice' })).body.id
})

const base = (body: Record<string, unknown>, id = panelId) => alice.post(`/api/panels/${id}/columns/base`, body)
const calc = (body: Record<string, unknown>, id = panelId) => alice.post(`/api/panels/${id}/columns/calculated`, body)
const paths = (res: { body: { details: { path: string }[] } }) => res.body.details.map((d) => d.path)

async function seedDataSource(forPanel: number) {
  const now = '2026-01-01T12:00:00.000Z'
  const [row] = await t.deps.db
    .insert(dataSources)
    .values({
      tenantId: 'tenant-a',
      userId: 'alice',
      panelId: forPanel,
      type: 'file',
      config: {},
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return row.id
}

const columnChanges = () => t.deps.db.select().from(changes).where(eq(changes.entityType, 'Column'))

describe('GET /api/panels/{panelId}/columns', () => {
  it('answers empty lists for a panel without columns', async () => {
    const res = await alice.get(`/api/panels/${panelId}/columns`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ baseColumns: [], calculatedColumns: [] })
  })

  it('lists base and calculated columns separately, each ordered by id', async () => {
    const a = (await base({ name: 'Birth Date', fhirPath: 'Patient.birthDate', type: 'date' })).body
    const x = (await calc({ name: 'Age', formula: 'AGE({Birth Date})', type: 'number' })).body
    const b = (await base({ name: 'Gender', sourceField: 'gender' })).body
    const y = (await calc({ name: 'Label', formula: '{Gender} & " " & {Age}' })).body
    const res = await alice.get(`/api/panels/${panelId}/columns?tenantId=tenant-a&userId=alice`)
    expect(res.status).toBe(200)
    expect(res.body.baseColumns.map((c: { id: number }) => c.id)).toEqual([a.id, b.id])
    expect(res.body.calculatedColumns.map((c: { id: number }) => c.id)).toEqual([x.id, y.id])
    expect(res.body.baseColumns[0]).toEqual(a)
    expect(res.body.calculatedColumns[1]).toEqual(y)
  })

  it('answers 404 for an unknown or deleted panel and 400 for a non-integer id', async () => {
    expect((await alice.get('/api/panels/9999/columns')).status).toBe(404)
    expect((await alice.get('/api/panels/abc/columns')).status).toBe(400)
    await base({ name: 'Gender', sourceField: 'gender' })
    expect((await alice.delete(`/api/panels/${panelId}`, {})).status).toBe(204)
    const res = await alice.get(`/api/panels/${panelId}/columns`)
    expect(res.status).toBe(404)
    expect(res.body.error).toBe('Panel not found')
  })
})

describe('POST /api/panels/{panelId}/columns/base', () => {
  it('creates a base column with defaults, sourceField following fhirPath', async () => {
    const res = await base({ name: 'Birth Date', fhirPath: 'Patient.birthDate', tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number),
      panelId,
      columnType: 'base',
      name: 'Birth Date',
      type: 'text',
      kind: 'text',
      sourceField: 'Patient.birthDate',
      fhirPath: 'Patient.birthDate',
      dataSourceId: null,
      properties: {},
      metadata: {},
      tenantId: 'tenant-a',
      userId: 'alice',
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    })
  })

  it('defaults fhirPath to sourceField, and stores both when both are sent', async () => {
    const one = await base({ name: 'Gender', sourceField: 'gender' })
    expect(one.body).toMatchObject({ sourceField: 'gender', fhirPath: 'gender' })
    const two = await base({ name: 'Name', sourceField: 'name', fhirPath: 'Patient.name.given', type: 'custom-kind' })
    expect(two.body).toMatchObject({ sourceField: 'name', fhirPath: 'Patient.name.given', type: 'custom-kind' })
  })

  it('stores properties and metadata, free-form beyond the checked fields', async () => {
    const properties = {
      displaySettings: { width: 120, alignment: 'right', frozen: true },
      validation: { pattern: '^\\d+$' },
      x: 1,
    }
    const res = await base({ name: 'MRN', sourceField: 'mrn', properties, metadata: { origin: 'ehr' } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ properties, metadata: { origin: 'ehr' } })
  })

  it('requires fhirPath or sourceField', async () => {
    const res = await base({ name: 'Nothing' })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(paths(res)).toEqual(['fhirPath'])
  })

  it('rejects a missing, empty or over-100-character name and a bad type, naming the field', async () => {
    for (const name of [undefined, '', '   ', 'x'.repeat(101)]) {
      const res = await base({ name, sourceField: 'a' })
      expect(res.status).toBe(400)
      expect(paths(res)).toContain('name')
    }
    for (const type of ['', 'x'.repeat(51), 42]) {
      const res = await base({ name: 'A', sourceField: 'a', type })
      expect(res.status).toBe(400)
      expect(paths(res)).toEqual(['type'])
    }
  })

  it('checks the reference-shape properties, naming each field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ displaySettings: { width: 49 } }, 'properties.displaySettings.width'],
      [{ displaySettings: { width: 1001 } }, 'properties.displaySettings.width'],
      [{ displaySettings: { alignment: 'middle' } }, 'properties.displaySettings.alignment'],
      [{ validation: { minLength: -1 } }, 'properties.validation.minLength'],
      [{ validation: { maxLength: 0 } }, 'properties.validation.maxLength'],
      [{ validation: { pattern: '([a-z' } }, 'properties.validation.pattern'],
    ]
    for (const [properties, path] of cases) {
      const res = await base({ name: 'A', sourceField: 'a', properties })
      expect(res.status).toBe(400)
      expect(paths(res)).toEqual([path])
    }
    expect((await base({ name: 'A', sourceField: 'a', properties: 'wide' })).status).toBe(400)
  })

  it('accepts a data source of the same panel and refuses others with 404', async () => {
    const own = await seedDataSource(panelId)
    const otherPanel = (await alice.post('/api/panels', { name: 'Other', tenantId: 'tenant-a', userId: 'alice' })).body.id
    const foreign = await seedDataSource(otherPanel)
    const ok = await base({ name: 'A', sourceField: 'a', dataSourceId: own })
    expect(ok.status).toBe(201)
    expect(ok.body.dataSourceId).toBe(own)
    for (const dataSourceId of [foreign, 9999]) {
      const res = await base({ name: 'B', sourceField: 'b', dataSourceId })
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ error: 'Data source not found', code: 'NOT_FOUND' })
      expect(res.body.message).toBe(`Data source ${dataSourceId} not found for tenant tenant-a`)
    }
  })

  it('refuses a duplicate name within the panel with 409, across both kinds', async () => {
    const first = (await base({ name: 'Age', sourceField: 'age' })).body
    const again = await base({ name: 'Age', sourceField: 'other' })
    expect(again.status).toBe(409)
    expect(again.body).toMatchObject({ error: 'Conflict', code: 'CONFLICT', details: [{ id: first.id, name: 'Age' }] })
    expect((await calc({ name: 'Age', formula: '1' })).status).toBe(409)
    const otherPanel = (await alice.post('/api/panels', { name: 'Other', tenantId: 'tenant-a', userId: 'alice' })).body.id
    expect((await base({ name: 'Age', sourceField: 'age' }, otherPanel)).status).toBe(201)
  })

  it('answers 404 for an unknown panel', async () => {
    const res = await base({ name: 'A', sourceField: 'a' }, 9999)
    expect(res.status).toBe(404)
    expect(res.body.error).toBe('Panel not found')
  })

  it('records a CREATE change with the created fields', async () => {
    const col = (await base({ name: 'Gender', sourceField: 'gender', type: 'select' })).body
    const [change] = await columnChanges()
    expect(change).toMatchObject({ panelId, entityType: 'Column', entityId: col.id, action: 'CREATE', userId: 'alice' })
    expect(change.changes).toMatchObject({
      name: { newValue: 'Gender' },
      columnType: { newValue: 'base' },
      type: { newValue: 'select' },
      sourceField: { newValue: 'gender' },
      fhirPath: { newValue: 'gender' },
    })
  })
})

describe('POST /api/panels/{panelId}/columns/calculated', () => {
  beforeEach(async () => {
    await base({ name: 'Age', sourceField: 'age', type: 'number' })
    await base({ name: 'Weight', sourceField: 'weight', type: 'number' })
  })

  it('creates a calculated column, deriving its dependencies from the formula', async () => {
    const res = await calc({ name: 'Score', formula: 'ROUND({Weight} / {Age} + {Age}, 2)', type: 'number', tenantId: 'tenant-a' })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number),
      panelId,
      columnType: 'calculated',
      name: 'Score',
      type: 'number',
      kind: 'number',
      sourceField: null,
      fhirPath: null,
      dataSourceId: null,
      formula: 'ROUND({Weight} / {Age} + {Age}, 2)',
      dependencies: ['Weight', 'Age'],
      properties: {},
      metadata: {},
      tenantId: 'tenant-a',
      userId: 'alice',
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    })
  })

  it('keeps sent dependencies that name source paths besides the referenced columns', async () => {
    const res = await calc({
      name: 'Years',
      formula: "DATEDIFF('year', Patient.birthDate, NOW()) + {Age} * 0",
      dependencies: ['Patient.birthDate', 'Age'],
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ type: 'text', dependencies: ['Patient.birthDate', 'Age'] })
  })

  it('may reference other calculated columns', async () => {
    await calc({ name: 'Double', formula: '{Age} * 2' })
    const res = await calc({ name: 'Quad', formula: '{Double} * 2' })
    expect(res.status).toBe(201)
    expect(res.body.dependencies).toEqual(['Double'])
  })

  it('answers FORMULA_ERROR with a suggestion for an unknown column', async () => {
    const res = await calc({ name: 'Bad', formula: '{age} + 1' })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: 'Validation Error', code: 'FORMULA_ERROR' })
    expect(res.body.details).toEqual([
      { type: 'reference', message: 'Unknown column {age}', position: 0, suggestion: 'did you mean {Age}?' },
    ])
  })

  it('reports every formula error at once', async () => {
    const res = await calc({ name: 'Bad', formula: 'IF({Wieght} > 1, {Nothing}, ("x")' })
    expect(res.status).toBe(400)
    expect(res.body.details.map((e: { type: string }) => e.type)).toEqual(['syntax', 'reference', 'reference'])
    expect(res.body.details[1].suggestion).toBe('did you mean {Weight}?')
  })

  it('refuses a column that references itself', async () => {
    const res = await calc({ name: 'Loop', formula: '{Loop} + 1' })
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual([{ type: 'circular', message: 'Circular reference: {Loop} → {Loop}', position: 0 }])
  })

  it('refuses dependencies that miss referenced columns, naming them', async () => {
    const res = await calc({ name: 'BMI', formula: '{Weight} / ({Age} ^ 2)', dependencies: ['Weight'] })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('FORMULA_ERROR')
    expect(res.body.message).toContain('missing: {Age}')
    expect(res.body.details).toEqual([
      { type: 'reference', message: 'dependencies must list every column the formula references; missing: {Age}' },
    ])
  })

  it('refuses dependencies naming a column the formula does not reference', async () => {
    const res = await calc({ name: 'X', formula: '{Age}', dependencies: ['Age', 'Weight'] })
    expect(res.status).toBe(400)
    expect(res.body.details[0].message).toContain('{Weight}')
  })

  it('validates formula, dependencies and properties as fields', async () => {
    for (const formula of [undefined, '', 'x'.repeat(10001), 12]) {
      const res = await calc({ name: 'X', formula })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(paths(res)).toEqual(['formula'])
    }
    expect(paths(await calc({ name: 'X', formula: '1', dependencies: 'Age' }))).toEqual(['dependencies'])
    const props = await calc({ name: 'X', formula: '1', properties: { displaySettings: { width: 5000 } } })
    expect(paths(props)).toEqual(['properties.displaySettings.width'])
  })

  it('records a CREATE change with formula and dependencies', async () => {
    const col = (await calc({ name: 'Double', formula: '{Age} * 2' })).body
    const created = (await columnChanges()).find((c) => c.entityId === col.id)
    expect(created).toMatchObject({ action: 'CREATE', panelId })
    expect(created?.changes).toMatchObject({
      name: { newValue: 'Double' },
      columnType: { newValue: 'calculated' },
      formula: { newValue: '{Age} * 2' },
      dependencies: { newValue: ['Age'] },
    })
  })

  it('answers 404 for another panel id and stores nothing', async () => {
    expect((await calc({ name: 'X', formula: '1' }, 9999)).status).toBe(404)
    const rows = await t.deps.db
      .select()
      .from(changes)
      .where(and(eq(changes.entityType, 'Column'), eq(changes.panelId, 9999)))
    expect(rows).toEqual([])
  })
})
