import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { sendJson, startJsonServer } from '../../helpers/servers.ts'

let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Vitals', tenantId: 'tenant-a', userId: 'alice' })).body.id
  for (const [name, type] of [
    ['Weight', 'number'],
    ['Height', 'number'],
    ['Birth Date', 'date'],
  ]) {
    const res = await alice.post(`/api/panels/${panelId}/columns/base`, { name, type, sourceField: name.toLowerCase() })
    expect(res.status).toBe(201)
  }
})

describe('GET /api/formulas/functions', () => {
  it('answers the catalogue, at least 80 functions across the seven categories, filtered by category', async () => {
    const all = await alice.get('/api/formulas/functions')
    expect(all.status).toBe(200)
    expect(all.body.length).toBeGreaterThanOrEqual(80)
    expect(new Set(all.body.map((f: { category: string }) => f.category))).toEqual(
      new Set(['text', 'math', 'date', 'logical', 'lookup', 'statistical', 'conversion']),
    )
    const round = all.body.find((f: { name: string }) => f.name === 'ROUND')
    expect(round).toMatchObject({ category: 'math', returnType: 'number' })
    expect(round.examples.length).toBeGreaterThan(0)
    const dates = await alice.get('/api/formulas/functions?category=date')
    expect(dates.body.every((f: { category: string }) => f.category === 'date')).toBe(true)
    expect((await alice.get('/api/formulas/functions?category=astrology')).status).toBe(400)
  })
})

describe('POST /api/formulas/validate', () => {
  const validate = (body: Record<string, unknown>) => alice.post('/api/formulas/validate', { panelId, ...body })

  it('answers valid with the derived dependencies and return type', async () => {
    const res = await validate({ formula: 'ROUND({Weight} / POWER({Height} / 100, 2), 1)' })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ valid: true, errors: [], dependencies: ['Weight', 'Height'], returnType: 'number' })
  })

  it('answers every error with its type, position and suggestion', async () => {
    const res = await validate({ formula: '{Wieght} + Height' })
    expect(res.body.valid).toBe(false)
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'reference', position: 0, suggestion: expect.stringContaining('{Weight}') }),
        expect.objectContaining({ type: 'reference', position: 11, suggestion: expect.stringContaining('{Height}') }),
      ]),
    )
    const typed = await validate({ formula: '{Birth Date} * 2' })
    expect(typed.body.errors.map((e: { type: string }) => e.type)).toContain('type')
    const syntax = await validate({ formula: 'ROUND({Weight}, ' })
    expect(syntax.body.errors[0]).toMatchObject({ type: 'syntax' })
  })

  it('checks a sent dependencies list against the derived one', async () => {
    const res = await validate({ formula: '{Weight} * 2', dependencies: ['Height'] })
    expect(res.body.valid).toBe(false)
  })

  it("answers 404 for another tenant's panel and 400 without a formula", async () => {
    const mallory = clientFor(t.app, 'tenant-b', 'mallory')
    expect((await mallory.post('/api/formulas/validate', { panelId, formula: '1' })).status).toBe(404)
    expect((await validate({ formula: '' })).status).toBe(400)
  })
})

describe('GET /api/formulas/context', () => {
  it("lists the panel's columns with their types, the functions and the constants", async () => {
    const res = await alice.get(`/api/formulas/context?panelId=${panelId}`)
    expect(res.status).toBe(200)
    expect(res.body.availableColumns).toEqual([
      { name: 'Weight', type: 'number', columnType: 'base' },
      { name: 'Height', type: 'number', columnType: 'base' },
      { name: 'Birth Date', type: 'date', columnType: 'base' },
    ])
    expect(res.body.functions.length).toBeGreaterThanOrEqual(80)
    expect(res.body.constants.map((c: { name: string }) => c.name)).toEqual(['TRUE', 'FALSE'])
    expect((await clientFor(t.app, 'tenant-b', 'm').get(`/api/formulas/context?panelId=${panelId}`)).status).toBe(404)
  })
})

describe('POST /api/formulas/preview', () => {
  it('evaluates against given values and a source record, storing nothing', async () => {
    const res = await alice.post('/api/formulas/preview', {
      formula: 'ROUND({Weight} / POWER({Height} / 100, 2), 1) & " " & FIRST(Patient.name.given)',
      values: { Weight: 70, Height: 175 },
      record: { resourceType: 'Patient', name: [{ given: ['Ada'] }] },
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ value: '22.9 Ada', returnType: 'text' })
    const err = await alice.post('/api/formulas/preview', { formula: '{Weight} / 0', values: { Weight: 1 } })
    expect(err.body).toMatchObject({ value: null, error: { code: 'DIV_ZERO' } })
  })

  it("evaluates against the panel's first rows", async () => {
    const server = await startJsonServer((_req, res) =>
      sendJson(res, 200, [
        { id: 'a', weight: 70, height: 175 },
        { id: 'b', weight: 'heavy', height: 180 },
        { id: 'c', weight: 90, height: 190 },
      ]),
    )
    try {
      const source = await alice.post(`/api/panels/${panelId}/datasources`, {
        type: 'api',
        config: { apiEndpoint: server.url, keyField: 'id' },
      })
      expect(source.body).toMatchObject({ syncStatus: 'success', errorMessage: null })
      const rows = await alice.post('/api/formulas/preview', { formula: '{Weight} * 2', panelId, limit: 2 })
      expect(rows.status).toBe(200)
      expect(rows.body).toEqual({
        returnType: 'number',
        values: [
          { _id: expect.any(Number), value: 140 },
          { _id: expect.any(Number), value: 0 },
        ],
      })
    } finally {
      await server.close()
    }
  })

  it('answers 400 without panelId or values, and static errors in errors', async () => {
    expect((await alice.post('/api/formulas/preview', { formula: '1' })).status).toBe(400)
    const bad = await alice.post('/api/formulas/preview', { formula: '{Nope} + 1', values: { Weight: 1 } })
    expect(bad.body.errors[0]).toMatchObject({ type: 'reference' })
  })
})
