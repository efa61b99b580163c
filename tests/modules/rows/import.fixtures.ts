import type { TestApp } from '../../helpers/app.ts'
import { tokenFor } from '../../helpers/auth.ts'
import type { TestClient } from '../../helpers/http.ts'

export const createPanel = async (c: TestClient, name = 'Import panel') => {
  const res = await c.post('/api/panels', { name, tenantId: c.tenantId, userId: c.userId })
  if (res.status !== 201) throw new Error(`panel create failed: ${res.status}`)
  return res.body.id as number
}

export async function baseColumn(c: TestClient, panelId: number, body: Record<string, unknown>) {
  const res = await c.post(`/api/panels/${panelId}/columns/base`, body)
  if (res.status !== 201) throw new Error(`column create failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

export async function calculatedColumn(c: TestClient, panelId: number, body: Record<string, unknown>) {
  const res = await c.post(`/api/panels/${panelId}/columns/calculated`, body)
  if (res.status !== 201) throw new Error(`column create failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

interface ImportOptions {
  tenant?: string
  user?: string
}

const send = async (t: TestApp, panelId: number, body: BodyInit, headers: Record<string, string>, o: ImportOptions) => {
  const token = await tokenFor(o.tenant ?? 'tenant-a', o.user ?? 'alice')
  const res = await t.app.request(`/api/panels/${panelId}/import`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, ...headers },
    body,
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

/** POST …/import as multipart: the file in `file`, the config as JSON in `config`. */
export function importFile(
  t: TestApp,
  panelId: number,
  file: { content: BlobPart; name: string },
  config: unknown,
  o: ImportOptions = {},
) {
  const form = new FormData()
  form.set('file', new File([file.content], file.name))
  form.set('config', typeof config === 'string' ? config : JSON.stringify(config))
  return send(t, panelId, form, {}, o)
}

/** POST …/import with a JSON body `{ config, rows }`. */
export const importRows = (t: TestApp, panelId: number, config: unknown, rows: unknown[], o: ImportOptions = {}) =>
  send(t, panelId, JSON.stringify({ config, rows }), { 'Content-Type': 'application/json' }, o)

/** The panel's stored rows by column name, with key, data and errors (records in their current generation). */
export async function storedRows(t: TestApp, panelId: number) {
  const cols = await t.client.execute({ sql: 'SELECT id, name FROM columns WHERE panel_id = ? ORDER BY id', args: [panelId] })
  const res = await t.client.execute({
    sql: `SELECT r.id, r.key, r.data, r.cells, r.errors, r.cells_version, s.type FROM records r
          JOIN data_sources s ON s.id = r.data_source_id AND r.generation = s.current_generation
          WHERE r.panel_id = ? ORDER BY r.id`,
    args: [panelId],
  })
  return res.rows.map((r) => {
    const cells = JSON.parse(String(r.cells ?? '{}'))
    const byName: Record<string, unknown> = {}
    for (const c of cols.rows) byName[String(c.name)] = cells[String(c.id)]
    return {
      id: Number(r.id),
      key: String(r.key),
      type: String(r.type),
      data: JSON.parse(String(r.data)),
      errors: r.errors === null ? null : JSON.parse(String(r.errors)),
      cells: byName,
    }
  })
}

/** Counts that must not move when an import fails as a whole. */
export async function footprint(t: TestApp, panelId: number) {
  const one = async (sql: string) => Number((await t.client.execute({ sql, args: [panelId] })).rows[0].n)
  return {
    records: await one('SELECT count(*) AS n FROM records WHERE panel_id = ?'),
    columns: await one('SELECT count(*) AS n FROM columns WHERE panel_id = ?'),
    sources: await one('SELECT count(*) AS n FROM data_sources WHERE panel_id = ?'),
    changes: await one('SELECT count(*) AS n FROM changes WHERE panel_id = ?'),
  }
}
