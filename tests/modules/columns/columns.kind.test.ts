import { readFileSync } from 'node:fs'
import { beforeEach, describe, expect, it } from 'vitest'
import { KNOWN_TYPES } from '../../../src/engine/cells/coerce.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

/**
 * What the service makes of a column's free `type` (issue 20 item 9; docs/views-and-rows.md "Kinds
 * of cells"): every column answer carries `kind`, so a misspelt type is visible at once, and the
 * known type names with their kinds are listed in the OpenAPI description of `type` and in the docs,
 * both from the one mapping.
 */

let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Diabetes', tenantId: 'tenant-a', userId: 'alice' })).body.id
})

const base = (name: string, type: string) => alice.post(`/api/panels/${panelId}/columns/base`, { name, type, sourceField: name })

describe('kind in column answers', () => {
  it('accepts a misspelt type and answers kind "text"; a known one its kind, in any case', async () => {
    const misspelt = await base('Age', 'nubmer')
    expect(misspelt.status).toBe(201)
    expect(misspelt.body).toMatchObject({ type: 'nubmer', kind: 'text' })
    expect((await base('Weight', 'number')).body).toMatchObject({ type: 'number', kind: 'number' })
    expect((await base('Height', 'Decimal')).body.kind).toBe('number')
    expect((await base('Tags', 'multi_select')).body.kind).toBe('list')
    expect((await base('Seen', 'datetime')).body.kind).toBe('datetime')
  })

  it('gives a calculated column at the default text type the kind its formula returns', async () => {
    await base('Weight', 'number')
    const double = await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Double', formula: '{Weight} * 2' })
    expect(double.status, JSON.stringify(double.body)).toBe(201)
    expect(double.body).toMatchObject({ type: 'text', kind: 'number' })
  })

  it('carries kind in the list and after an update', async () => {
    const age = await base('Age', 'nubmer')
    await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Older', formula: '{Age} + 1', type: 'number' })
    const list = (await alice.get(`/api/panels/${panelId}/columns`)).body
    expect(list.baseColumns.map((c: { name: string; kind: string }) => [c.name, c.kind])).toEqual([['Age', 'text']])
    expect(list.calculatedColumns.map((c: { name: string; kind: string }) => [c.name, c.kind])).toEqual([['Older', 'number']])
    const fixed = await alice.put(`/api/columns/${age.body.id}`, { type: 'number' })
    expect(fixed.status).toBe(200)
    expect(fixed.body).toMatchObject({ type: 'number', kind: 'number' })
    const unchanged = await alice.put(`/api/columns/${age.body.id}`, { type: 'number' })
    expect(unchanged.body.kind).toBe('number')
  })

  it('still accepts a view naming columns the panel does not have yet', async () => {
    const view = await alice.post('/api/views', {
      name: 'Ahead of its columns',
      panelId,
      config: { columns: ['Not yet'] },
      sorting: [{ columnTitle: 'Not yet', direction: 'asc' }],
    })
    expect(view.status, JSON.stringify(view.body)).toBe(201)
  })
})

/** `type → kind` pairs of a text, as the OpenAPI description writes them. */
const pairsIn = (text: string) => Object.fromEntries([...text.matchAll(/(\w+) → (\w+)/g)].map((m) => [m[1], m[2]]))

describe('the known types, listed from the mapping', () => {
  it('lists every known type with its kind in the OpenAPI description of type, and the answer declares kind', async () => {
    const doc = await (await t.app.request('/openapi.json')).json()
    const schemas = doc.components.schemas
    for (const name of ['Column', 'CreateBaseColumn', 'CreateCalculatedColumn', 'UpdateColumn']) {
      expect(pairsIn(schemas[name].properties.type.description), name).toEqual(KNOWN_TYPES)
    }
    expect(schemas.Column.properties.kind.enum).toEqual(['text', 'number', 'boolean', 'date', 'datetime', 'list', 'json'])
    expect(schemas.Column.required).toContain('kind')
  })

  it('lists the same in docs/views-and-rows.md', () => {
    const page = readFileSync(new URL('../../../docs/views-and-rows.md', import.meta.url), 'utf8')
    const rows = [...page.matchAll(/^\| `(\w+)` \| (\w+) \|$/gm)].map((m) => [m[1], m[2]])
    expect(Object.fromEntries(rows)).toEqual(KNOWN_TYPES)
    expect(rows).toHaveLength(Object.keys(KNOWN_TYPES).length)
  })
})
