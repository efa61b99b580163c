import { sql } from 'drizzle-orm'
import type { Db } from '../../src/db/client.ts'
import { patient } from './fhir-patients.ts'

/**
 * The panel of bench:views (and of its service-process case, bench/views-rss-case.ts): 7 base
 * columns read from FHIR Patients and 3 calculated ones, and the views both create, so both
 * measure the same panel.
 */
export const BASE_COLUMNS: [name: string, fhirPath: string, type: string][] = [
  ['Family', 'Patient.name.family.first()', 'text'],
  ['Given', 'Patient.name.given.first()', 'text'],
  ['Gender', 'Patient.gender', 'text'],
  ['Birth Date', 'Patient.birthDate', 'date'],
  ['City', 'Patient.address.city.first()', 'text'],
  ['Postal Code', 'Patient.address.postalCode.first()', 'text'],
  ['Active', 'Patient.active', 'boolean'],
]

export const CALCULATED_COLUMNS: [name: string, formula: string, type: string][] = [
  ['Age', 'AGE({Birth Date})', 'number'],
  ['Name', '{Given} & " " & {Family}', 'text'],
  ['Senior', '{Age} >= 65', 'boolean'],
]

/** Sends a request through the app and answers its JSON body (in-process-service.ts `json`). */
type Json = (method: string, path: string, body?: unknown) => Promise<any>

/** Creates the panel and its 10 columns; answers the panel and the calculated columns by name. */
export async function createViewsPanel(json: Json) {
  const panel = await json('POST', '/api/panels', { name: 'Bench panel', tenantId: 'bench', userId: 'bench' })
  for (const [name, fhirPath, type] of BASE_COLUMNS) {
    await json('POST', `/api/panels/${panel.id}/columns/base`, { name, fhirPath, type })
  }
  const calc: Record<string, { id: number }> = {}
  for (const [name, formula, type] of CALCULATED_COLUMNS) {
    calc[name] = await json('POST', `/api/panels/${panel.id}/columns/calculated`, { name, formula, type })
  }
  return { panel: panel as { id: number }, calc }
}

/** The NDJSON file source of the panel (a file the bench wrote under the service's files folder). */
export const patientsSource = (filePath: string) => ({ type: 'json', config: { filePath, format: 'json' } })

const table = { columns: [], groupBy: [], layout: 'table' }
const familyThenBirthDate = [
  { columnTitle: 'Family', direction: 'asc', priority: 1 },
  { columnTitle: 'Birth Date', direction: 'desc', priority: 2 },
]

/** The view a page is read from: 2 filters (Age ≥ 40, female) and 2 sort keys. */
export const filteredView = (panelId: number) => ({
  name: 'Seniors by age',
  panelId,
  config: table,
  filters: [
    { columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 40 },
    { columnTitle: 'Gender', operator: 'equals', value: 'female' },
  ],
  sorting: familyThenBirthDate,
})

/** Grouped by City with 3 aggregations (average and max of Age, distinct Family). */
export const groupedView = (panelId: number) => ({
  name: 'By city',
  panelId,
  config: { ...table, groupBy: ['City'] },
  aggregations: [
    { columnTitle: 'Age', function: 'average', alias: 'meanAge' },
    { columnTitle: 'Age', function: 'max' },
    { columnTitle: 'Family', function: 'distinct' },
  ],
})

/** Every row, in record-id order (`sorted` false) or by Family then Birth Date. */
export const everyoneView = (panelId: number, sorted: boolean) =>
  sorted
    ? { name: 'Everyone by family', panelId, config: table, sorting: familyThenBirthDate }
    : { name: 'Everyone', panelId, config: table }

/** The webhook source of the small write (a delivery updating 3 rows). */
export const WEBHOOK_ENDPOINT = 'bench-views-writes'
export const webhookSource = {
  type: 'webhook',
  config: { endpoint: WEBHOOK_ENDPOINT, events: ['data.created', 'data.updated'], verifySignature: false },
}

/** The rows the small write updates: female and over 40, so in the filtered view. */
export const WRITTEN = [1, 3, 5]
/** Family of the written rows at delivery `n`: it moves them between the view's first page and its last. */
export const familyAt = (n: number) => (n % 2 === 0 ? 'Abbott' : 'Young')

/** Delivery `n` of the small write: `data.updated` of the 3 rows with their Family changed. */
export const webhookDelivery = (n: number) =>
  JSON.stringify({
    id: `bench-${n}`,
    event: 'data.updated',
    data: WRITTEN.map((i) => patient(i)).map((p) => ({ ...p, name: [{ ...p.name[0], family: familyAt(n) }] })),
  })

/** Lines of a streamed response body (a CSV export), counted without holding the body. */
export async function countLines(res: Response): Promise<number> {
  if (!res.body) return 0
  let count = 0
  let last = 10
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) count++
    if (chunk.length > 0) last = chunk[chunk.length - 1]
  }
  return last === 10 ? count : count + 1
}

/** Resolves once the panel's rows are materialised with its current columns (a recompute ended), seen within 5 ms. */
export async function untilMaterialised(db: Db, panelId: number): Promise<void> {
  for (;;) {
    const [row] = await db.all<{ c: number; m: number }>(
      sql`SELECT columns_version AS c, materialised_version AS m FROM panels WHERE id = ${panelId}`,
    )
    if (Number(row.c) === Number(row.m)) return
    await new Promise((r) => setTimeout(r, 5))
  }
}
