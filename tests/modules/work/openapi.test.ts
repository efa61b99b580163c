import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'

/**
 * The OpenAPI document describes working the list (src/modules/work/work.routes.ts): every route,
 * the ETag it answers, the If-Match it reads, 409 on claim, 412 on PATCH, 204 on next, and the
 * rows endpoints' `assignee` parameter.
 */

type Parameter = { name: string; in: string; schema?: Record<string, unknown> }
type Operation = {
  summary?: string
  security?: Record<string, string[]>[]
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> }
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema?: { $ref?: string } }> }>
}

let doc: any
beforeAll(async () => {
  const t = await makeTestApp()
  const res = await t.app.request('/openapi.json')
  expect(res.status).toBe(200)
  doc = await res.json()
})

const op = (method: string, path: string): Operation => {
  const found = doc.paths[path]?.[method]
  expect(found, `${method.toUpperCase()} ${path} is described`).toBeDefined()
  return found
}

const ROWS = ['/api/panels/{panelId}/rows/{rowId}', '/api/views/{id}/rows/{rowId}']
/** Routes answering one row with its work state (and its ETag). */
const ROW_ANSWERS: [string, string][] = ROWS.flatMap((r): [string, string][] => [
  ['get', r],
  ['patch', `${r}/work`],
  ['post', `${r}/claim`],
  ['post', `${r}/release`],
])
const ALL: [string, string][] = [
  ...ROW_ANSWERS,
  ['post', '/api/views/{id}/next'],
  ['get', '/api/panels/{panelId}/workflow'],
  ['put', '/api/panels/{panelId}/workflow'],
]

const errorRef = (o: Operation, status: string) => o.responses[status]?.content?.['application/json']?.schema?.$ref

describe('working the list in /openapi.json', () => {
  it('describes every route, bearer-secured, with a summary, a 200 and the error answers', () => {
    for (const [method, path] of ALL) {
      const o = op(method, path)
      const label = `${method} ${path}`
      expect(o.summary, label).toBeTruthy()
      expect(o.security, label).toEqual([{ Bearer: [] }])
      expect(o.responses['200'], label).toBeDefined()
      for (const status of ['400', '401', '403', '404'])
        expect(errorRef(o, status), `${label} ${status}`).toBe('#/components/schemas/Error')
    }
  })

  it('names the path parameters as integers', () => {
    for (const [method, path] of ROW_ANSWERS) {
      const params = op(method, path).parameters ?? []
      for (const name of [path.startsWith('/api/panels') ? 'panelId' : 'id', 'rowId']) {
        const p = params.find((x) => x.name === name && x.in === 'path')
        expect(p?.schema?.type, `${method} ${path} ${name}`).toBe('integer')
      }
    }
  })

  it('answers the ETag header with every row, and the WorkedRow schema with its WorkState', () => {
    for (const [method, path] of [...ROW_ANSWERS, ['post', '/api/views/{id}/next'] as [string, string]]) {
      const ok = op(method, path).responses['200']
      expect(ok.headers, `${method} ${path}`).toHaveProperty('ETag')
      expect(ok.content?.['application/json']?.schema?.$ref).toBe('#/components/schemas/WorkedRow')
    }
    expect(doc.components.schemas.WorkedRow.properties._work.$ref).toBe('#/components/schemas/WorkState')
    expect(Object.keys(doc.components.schemas.WorkState.properties).sort()).toEqual([
      'assignee',
      'claimExpiresAt',
      'claimedAt',
      'commentCount',
      'dueAt',
      'snoozedUntil',
      'status',
      'updatedAt',
      'updatedBy',
      'version',
    ])
  })

  it('reads If-Match on PATCH and answers 412 with the error body', () => {
    for (const r of ROWS) {
      const o = op('patch', `${r}/work`)
      const ifMatch = (o.parameters ?? []).find((p) => p.in === 'header' && p.name.toLowerCase() === 'if-match')
      expect(ifMatch, r).toBeDefined()
      expect(errorRef(o, '412'), r).toBe('#/components/schemas/Error')
      expect(o.requestBody?.content['application/json'].schema.$ref).toBe('#/components/schemas/WorkPatch')
    }
    const patch = doc.components.schemas.WorkPatch
    expect(Object.keys(patch.properties)).toEqual(expect.arrayContaining(['status', 'assignee', 'dueAt', 'snoozedUntil']))
    expect(patch.additionalProperties).toBe(false)
  })

  it('answers 409 on claim, 204 on next, and bounds leaseSeconds', () => {
    for (const r of ROWS) expect(errorRef(op('post', `${r}/claim`), '409'), r).toBe('#/components/schemas/Error')
    const next = op('post', '/api/views/{id}/next')
    expect(next.responses['204']).toBeDefined()
    expect(next.responses['204'].content).toBeUndefined()
    expect(doc.components.schemas.ClaimRequest.properties.leaseSeconds).toMatchObject({
      type: 'integer',
      minimum: 10,
      maximum: 86_400,
    })
  })

  it('documents ?assignee on the rows endpoints', () => {
    for (const path of ['/api/panels/{panelId}/rows', '/api/views/{id}/rows']) {
      const p = (op('get', path).parameters ?? []).find((x) => x.name === 'assignee' && x.in === 'query')
      expect(p, path).toBeDefined()
      expect(JSON.stringify(p)).toContain('me')
    }
  })
})
