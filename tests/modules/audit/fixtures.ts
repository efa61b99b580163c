import { makeTestApp, type TestApp, type TestAppOptions } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { baseColumn, createPanel, importRows } from '../rows/import.fixtures.ts'

export interface AuditWorld {
  t: TestApp
  /** Owner of the panel and its view (tenant-a). */
  alice: TestClient
  /** Another user of tenant-a. */
  bob: TestClient
  /** A tenant admin of tenant-a. */
  admin: TestClient
  /** A user of tenant-b. */
  eve: TestClient
  /** A tenant admin of tenant-b. */
  evesAdmin: TestClient
  panelId: number
  viewId: number
}

/** 30 patients, ages 20..49: the view shows those of 30 and over (20 rows). */
export async function auditWorld(options: TestAppOptions = {}): Promise<AuditWorld> {
  const t = await makeTestApp(options)
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const panelId = await createPanel(alice)
  await baseColumn(alice, panelId, { name: 'Name', sourceField: 'name' })
  await baseColumn(alice, panelId, { name: 'Age', sourceField: 'age', type: 'number' })
  const rows = Array.from({ length: 30 }, (_, i) => ({ name: `Patient ${i}`, age: 20 + i }))
  const mapping = ['Name', 'Age'].map((c) => ({ sourceField: c.toLowerCase(), targetColumn: c }))
  const imported = await importRows(t, panelId, { format: 'json', mapping }, rows)
  if (imported.body.rowsImported !== 30) throw new Error('seed import failed')
  const view = await alice.post('/api/views', {
    name: 'Over 30',
    panelId,
    config: { columns: ['Name', 'Age'], groupBy: [], layout: 'table' },
    filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
  })
  if (view.status !== 201) throw new Error('seed view failed')
  // The seeding import is itself audited; tests start from an empty log.
  await t.client.execute('DELETE FROM access_records')
  return {
    t,
    alice,
    bob: clientFor(t.app, 'tenant-a', 'bob'),
    admin: clientFor(t.app, 'tenant-a', 'root', { role: 'admin' }),
    eve: clientFor(t.app, 'tenant-b', 'eve'),
    evesAdmin: clientFor(t.app, 'tenant-b', 'b-root', { role: 'admin' }),
    panelId,
    viewId: view.body.id,
  }
}

/** A request with the headers an audit record keeps (request id, client address, user agent). */
export async function requestAs(t: TestApp, tenant: string, user: string, path: string, headers: Record<string, string> = {}) {
  const res = await t.app.request(path, {
    headers: {
      ...(await authHeaders(tenant, user)),
      'X-Request-Id': 'req-1',
      'X-Forwarded-For': '203.0.113.7',
      'User-Agent': 'audit-test/1.0',
      ...headers,
    },
  })
  return { status: res.status, text: await res.text() }
}

/** Every stored access record, oldest first (straight from the table, so the log's reader is not under test). */
export async function storedRecords(t: TestApp) {
  const res = await t.client.execute('SELECT * FROM access_records ORDER BY id')
  return res.rows.map((r) => ({
    tenantId: r.tenant_id,
    userId: r.user_id,
    action: r.action,
    panelId: r.panel_id,
    viewId: r.view_id,
    dataSourceId: r.data_source_id,
    rowCount: r.row_count,
    query: JSON.parse(String(r.query)),
    path: r.path,
    requestId: r.request_id,
    ip: r.ip,
    userAgent: r.user_agent,
    outcome: r.outcome,
    status: r.status,
    errorCode: r.error_code,
    at: r.at,
  }))
}
