import { beforeEach, describe, expect, it } from 'vitest'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { type AuditWorld, auditWorld, requestAs } from './fixtures.ts'

let w: AuditWorld

beforeEach(async () => {
  w = await auditWorld()
})

/** Five records: alice reads the view twice and the panel once, exports once; bob is refused the view. */
async function seedLog() {
  await w.alice.get(`/api/views/${w.viewId}/rows`)
  w.t.clock.advance(60_000)
  await w.alice.get(`/api/panels/${w.panelId}/rows`)
  w.t.clock.advance(60_000)
  await w.alice.get(`/api/views/${w.viewId}/export`)
  w.t.clock.advance(60_000)
  await w.bob.get(`/api/views/${w.viewId}/rows`)
  w.t.clock.advance(60_000)
  await w.alice.get(`/api/views/${w.viewId}/rows?limit=3`)
}

describe('GET /api/audit', () => {
  it('is for tenant admins only: the owner and other users get 403', async () => {
    await seedLog()
    for (const c of [w.alice, w.bob, w.eve]) {
      const res = await c.get('/api/audit')
      expect(res.status).toBe(403)
      expect(res.body.code).toBe('FORBIDDEN')
    }
  })

  it('answers the tenant’s records newest first with total and hasMore', async () => {
    await seedLog()
    const res = await w.admin.get('/api/audit')
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(5)
    expect(res.body.hasMore).toBe(false)
    expect(res.body.records.map((r: { action: string; userId: string }) => `${r.userId}:${r.action}`)).toEqual([
      'alice:read',
      'bob:read',
      'alice:export',
      'alice:read',
      'alice:read',
    ])
    expect((await w.evesAdmin.get('/api/audit')).body).toEqual({ records: [], total: 0, hasMore: false })
  })

  it('filters by user, panel, view, action and time range', async () => {
    await seedLog()
    const ids = async (query: string) => {
      const res = await w.admin.get(`/api/audit?${query}`)
      expect(res.status).toBe(200)
      return res.body.records.map((r: { at: string }) => r.at.slice(11, 16))
    }
    expect(await ids('user=bob')).toEqual(['12:03'])
    expect(await ids(`viewId=${w.viewId}&action=read`)).toEqual(['12:04', '12:03', '12:00'])
    expect(await ids(`panelId=${w.panelId}&action=export`)).toEqual(['12:02'])
    expect(await ids('from=2026-01-01T12:01:00Z&to=2026-01-01T12:03:00Z')).toEqual(['12:02', '12:01'])
    expect((await w.admin.get('/api/audit?action=delete')).status).toBe(400)
    expect((await w.admin.get('/api/audit?from=2026-01-02&to=2026-01-01')).status).toBe(400)
  })

  it('pages with limit and offset or page', async () => {
    await seedLog()
    const first = await w.admin.get('/api/audit?limit=2')
    expect(first.body).toMatchObject({ total: 5, hasMore: true })
    const third = await w.admin.get('/api/audit?limit=2&page=3')
    expect(third.body.records).toHaveLength(1)
    expect(third.body.hasMore).toBe(false)
    const offset = await w.admin.get('/api/audit?limit=2&offset=2')
    expect(offset.body.records[0].id).toBe(first.body.records[1].id - 1)
  })

  it('refuses a tenantId other than the admin’s', async () => {
    expect((await w.admin.get('/api/audit?tenantId=tenant-b')).status).toBe(403)
  })
})

describe('GET /api/audit with Accept: application/fhir+json', () => {
  it.skipIf(onTarget('workers', SKIP.cfIp))('answers a searchset Bundle of AuditEvent resources', async () => {
    await requestAs(w.t, 'tenant-a', 'alice', `/api/views/${w.viewId}/rows?limit=4&sort=Age`)
    await requestAs(w.t, 'tenant-a', 'alice', `/api/views/${w.viewId}/export?format=csv`)
    await requestAs(w.t, 'tenant-a', 'bob', `/api/views/${w.viewId}/rows`)
    const res = await w.admin.get('/api/audit?limit=2', { Accept: 'application/fhir+json' })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 3 })
    expect(res.body.link.map((l: { relation: string }) => l.relation)).toEqual(['self', 'next'])
    expect(new URL(res.body.link[1].url).searchParams.get('offset')).toBe('2')
    const [refused, exported] = res.body.entry.map((e: { resource: unknown }) => e.resource)
    expect(refused).toMatchObject({
      resourceType: 'AuditEvent',
      type: { system: 'http://terminology.hl7.org/CodeSystem/audit-event-type', code: 'rest' },
      subtype: [{ system: 'http://hl7.org/fhir/restful-interaction', code: 'search-type' }],
      action: 'E',
      outcome: '4',
      agent: [{ who: { identifier: { system: 'urn:panels-api:user', value: 'bob' } }, requestor: true }],
    })
    expect(refused.outcomeDesc).toContain('404')
    expect(exported).toMatchObject({
      type: { system: 'http://dicom.nema.org/resources/ontology/DCM', code: '110106', display: 'Export' },
      action: 'R',
      recorded: '2026-01-01T12:00:00.000Z',
      outcome: '0',
      agent: [{ network: { address: '203.0.113.7', type: '2' } }],
      source: { site: 'tenant-a', observer: { identifier: { value: 'req-1' } } },
    })
    const entities = exported.entity as {
      what?: { identifier: { system: string; value: string } }
      role: { code: string }
      detail?: { type: string; valueString: string }[]
      query?: string
    }[]
    expect(entities.filter((e) => e.what).map((e) => [e.what?.identifier.system, e.what?.identifier.value])).toEqual([
      ['urn:panels-api:panel', String(w.panelId)],
      ['urn:panels-api:view', String(w.viewId)],
    ])
    const query = entities.find((e) => e.role.code === '24')
    expect(query?.detail).toEqual(
      expect.arrayContaining([
        { type: 'query', valueString: '{"format":"csv"}' },
        { type: 'rowCount', valueString: '20' },
        { type: 'userAgent', valueString: 'audit-test/1.0' },
      ]),
    )
    expect(Buffer.from(query?.query ?? '', 'base64').toString()).toBe('{"format":"csv"}')
  })
})
