import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'

/**
 * The FHIRPath engine loads on first need (src/engine/fhirpath/engine.ts): a panel that reads plain
 * rows through member paths never loads it; an expression beyond a member path, or a FHIR record
 * whose member path may need the engine's model, loads it and gets the engine's answer. Each test
 * starts from a fresh module graph, so the engine starts unloaded.
 */

const OBSERVATION = {
  resourceType: 'Observation',
  id: 'o1',
  status: 'final',
  valueQuantity: { value: 7.2, unit: '%' },
}
const PATIENT = {
  resourceType: 'Patient',
  id: 'p1',
  name: [
    { use: 'nickname', given: ['Addie'] },
    { use: 'official', family: 'Lovelace', given: ['Ada', 'Augusta'] },
  ],
}

let root: string
let payload: unknown[] = []
let server: FixtureServer

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'fhirpath-engine-'))
  await writeFile(join(root, 'patients.csv'), 'id,family,given,hba1c\np1,Lovelace,Ada,7.2\np2,Hopper,Grace,5.9\n')
  server = await startJsonServer((_req, res) => sendJson(res, 200, payload))
})
afterAll(async () => {
  await server.close()
  await rm(root, { recursive: true, force: true })
})

/** The app and the engine's state, from a fresh module graph (nothing loaded yet). */
async function freshApp() {
  vi.resetModules()
  const { makeTestApp } = await import('../../helpers/app.ts')
  const { clientFor } = await import('../../helpers/http.ts')
  const { importRows } = await import('./import.fixtures.ts')
  const { fhirPathEngineLoaded } = await import('../../../src/engine/fhirpath/engine.ts')
  const t = await makeTestApp({ filesDir: root })
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const panelId = (await alice.post('/api/panels', { name: 'Engine', tenantId: 'tenant-a', userId: 'alice' })).body.id as number
  const post = async (path: string, body: unknown) => {
    const res = await alice.post(path, body)
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }
  return {
    loaded: fhirPathEngineLoaded,
    base: (body: Record<string, unknown>) => post(`/api/panels/${panelId}/columns/base`, body),
    calculated: (body: Record<string, unknown>) => post(`/api/panels/${panelId}/columns/calculated`, body),
    source: (type: string, config: Record<string, unknown>) => post(`/api/panels/${panelId}/datasources`, { type, config }),
    importRows: (config: unknown, rows: unknown[]) => importRows(t, panelId, config, rows),
    preview: (formula: string, record?: object) => post('/api/formulas/preview', { formula, values: {}, record }),
    rows: async () => (await alice.get(`/api/panels/${panelId}/rows`)).body.data as Record<string, unknown>[],
  }
}

beforeEach(() => {
  payload = []
})

// The engine's state is read in the process that serves: a remote server's is out of reach.
describe.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))('the FHIRPath engine', () => {
  it('stays unloaded while plain CSV and JSON rows are synced, recomputed, imported and previewed through member paths', async () => {
    const app = await freshApp()
    await app.base({ name: 'Family', sourceField: 'family' })
    await app.base({ name: 'HbA1c', fhirPath: 'hba1c', type: 'number' })
    await app.base({ name: 'City', fhirPath: 'address.city.first()' })
    expect((await app.source('csv', { filePath: 'patients.csv' })).syncStatus).toBe('success')
    payload = [{ id: 'j1', family: 'Turing', hba1c: '6.1', address: { city: 'Wilmslow', postalCode: 'SK9' } }]
    expect((await app.source('api', { apiEndpoint: server.url })).syncStatus).toBe('success')
    // Added over stored rows: they are recomputed.
    await app.calculated({ name: 'Label', formula: 'UPPER({Family}) & " " & address.postalCode' })
    const imported = await app.importRows(
      { format: 'json', mapping: [{ sourceField: 'name', targetColumn: 'Family', transformation: 'UPPER({value})' }] },
      [{ name: 'Hamilton' }],
    )
    expect(imported.status).toBe(200)
    expect((await app.preview('address.city & "!"', { address: { city: 'Leeds' } })).value).toBe('Leeds!')

    expect((await app.rows()).map((r) => [r.Family, r.HbA1c, r.City, r.Label])).toEqual([
      ['Lovelace', 7.2, null, 'LOVELACE '],
      ['Hopper', 5.9, null, 'HOPPER '],
      ['Turing', 6.1, 'Wilmslow', 'TURING SK9'],
      ['HAMILTON', null, null, 'HAMILTON '],
    ])
    expect(app.loaded()).toBe(false)
  })

  it("loads for a column beyond a member path and answers the engine's value", async () => {
    const app = await freshApp()
    payload = [PATIENT]
    expect(app.loaded()).toBe(false)
    await app.base({ name: 'Official', fhirPath: "Patient.name.where(use='official').given.first()" })
    expect(app.loaded()).toBe(true)
    await app.source('api', { apiEndpoint: server.url })
    expect((await app.rows()).map((r) => r.Official)).toEqual(['Ada'])
  })

  it("loads for a FHIR record whose member path needs the engine's model (a choice type)", async () => {
    const app = await freshApp()
    await app.base({ name: 'Value', fhirPath: 'Observation.value.value', type: 'number' })
    expect(app.loaded()).toBe(false)
    payload = [OBSERVATION]
    await app.source('api', { apiEndpoint: server.url })
    expect(app.loaded()).toBe(true)
    expect((await app.rows()).map((r) => r.Value)).toEqual([7.2])
  })

  it('fails loudly, never as a cell error, when synchronous code reaches it unloaded', async () => {
    vi.resetModules()
    const { compileFhirPath } = await import('../../../src/engine/fhirpath/compile.ts')
    const { FhirPathEngineNotLoaded } = await import('../../../src/engine/fhirpath/engine.ts')
    const { compileFormula } = await import('../../../src/engine/formula/index.ts')
    const { materialise, planColumns } = await import('../../../src/engine/cells/materialise.ts')

    expect(compileFhirPath('family').evaluate({ family: 'Lovelace' })).toEqual(['Lovelace'])
    expect(() => compileFhirPath("Patient.name.where(use='official')")).toThrow(FhirPathEngineNotLoaded)
    expect(() => compileFhirPath('Observation.value').evaluate(OBSERVATION)).toThrow(FhirPathEngineNotLoaded)
    expect(() => compileFormula('FHIRPATH("Patient.name.count()")')).toThrow(FhirPathEngineNotLoaded)
    const clock = { now: () => new Date('2026-01-01T00:00:00Z') }
    expect(() => compileFormula('Observation.value.value').evaluate({ cells: {}, record: OBSERVATION }, clock)).toThrow(
      FhirPathEngineNotLoaded,
    )
    const plan = planColumns(
      [{ id: 1, name: 'Value', columnType: 'base', type: 'number', fhirPath: 'Observation.value.value', sourceField: 'v' }],
      () => () => ({ value: null }),
    )
    expect(() => materialise(plan, { dataSourceId: 1, data: OBSERVATION }, clock.now())).toThrow(FhirPathEngineNotLoaded)
    // Not read by its source field instead, nor planned as a column in error.
    const where = { id: 2, name: 'Given', columnType: 'base', type: 'text', fhirPath: "name.where(use='x')", sourceField: 'name' }
    expect(() => planColumns([where as never], () => () => ({ value: null }))).toThrow(FhirPathEngineNotLoaded)
  })

  it('is imported by src/engine/fhirpath/engine.ts alone', async () => {
    const src = join(import.meta.dirname, '../../../src')
    const files = (await readdir(src, { recursive: true })).filter((f) => f.endsWith('.ts'))
    const importers: string[] = []
    for (const file of files) {
      if (/(from|import\()\s*'fhirpath[/']/.test(await readFile(join(src, file), 'utf8'))) importers.push(file)
    }
    expect(importers).toEqual([join('engine', 'fhirpath', 'engine.ts')])
  })
})
