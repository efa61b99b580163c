import SwaggerParser from '@apidevtools/swagger-parser'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from './helpers/app.ts'

type Doc = any
type Operation = {
  summary?: string
  security?: Record<string, string[]>[]
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>
}

/** Every operation the spec and the contract name, in OpenAPI `{param}` form. */
const REQUIRED_OPERATIONS = [
  'GET /api/panels',
  'POST /api/panels',
  'GET /api/panels/{id}',
  'PUT /api/panels/{id}',
  'DELETE /api/panels/{id}',
  'GET /api/panels/{panelId}/datasources',
  'POST /api/panels/{panelId}/datasources',
  'PUT /api/datasources/{id}',
  'DELETE /api/datasources/{id}',
  'POST /api/datasources/{id}/sync',
  'GET /api/datasources/{id}/sync-runs',
  'GET /api/panels/{panelId}/columns',
  'POST /api/panels/{panelId}/columns/base',
  'POST /api/panels/{panelId}/columns/calculated',
  'PUT /api/columns/{id}',
  'DELETE /api/columns/{id}',
  'GET /api/views',
  'POST /api/views',
  'GET /api/views/{id}',
  'PUT /api/views/{id}',
  'DELETE /api/views/{id}',
  'POST /api/views/{id}/publish',
  'POST /api/views/{id}/unpublish',
  'GET /api/views/{id}/sorts',
  'PUT /api/views/{id}/sorts',
  'GET /api/views/{id}/filters',
  'PUT /api/views/{id}/filters',
  'GET /api/changes/panels',
  'GET /api/notifications/views',
  'PUT /api/notifications/views/mark-read',
  'GET /health',
]

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const
/** Routes that authenticate otherwise than with a bearer token (HMAC-signed webhooks, CONTRACT). */
const NOT_BEARER = /^\/api\/webhooks\//

let t: TestApp
let doc: Doc

beforeAll(async () => {
  t = await makeTestApp()
  const res = await t.app.request('/openapi.json')
  expect(res.status).toBe(200)
  doc = await res.json()
})

function operations(d: Doc): [string, Operation][] {
  return Object.entries(d.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => [`${m.toUpperCase()} ${path}`, item[m]] as [string, Operation]),
  )
}

const apiOperations = () => operations(doc).filter(([key]) => key.split(' ')[1].startsWith('/api/'))

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.0.0 document titled Panels API, version 1.0.0', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy()
    expect(doc.openapi).toBe('3.0.0')
    expect(doc.info).toMatchObject({ title: 'Panels API', version: '1.0.0' })
  })

  it('declares the Bearer security scheme', () => {
    expect(doc.components.securitySchemes.Bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  it('documents every operation of the spec and the contract', () => {
    const documented = new Set(operations(doc).map(([key]) => key))
    const missing = REQUIRED_OPERATIONS.filter((op) => !documented.has(op))
    expect(missing).toEqual([])
  })

  it('gives every /api operation a summary and bearer security', () => {
    const operationsOfApi = apiOperations()
    expect(operationsOfApi.length).toBeGreaterThan(0)
    for (const [key, op] of operationsOfApi) {
      expect(op.summary, key).toMatch(/\S/)
      if (NOT_BEARER.test(key.split(' ')[1])) continue
      expect(op.security, key).toContainEqual({ Bearer: [] })
    }
  })

  it('gives every /api operation a 2xx response with a schema (204 excepted)', () => {
    for (const [key, op] of apiOperations()) {
      const success = Object.keys(op.responses).filter((status) => /^2\d\d$/.test(status))
      expect(success.length, key).toBeGreaterThan(0)
      for (const status of success) {
        if (status === '204') continue
        expect(op.responses[status].content?.['application/json']?.schema, `${key} ${status}`).toBeTruthy()
      }
    }
  })

  it('gives every /api operation 400, 401 and 404 responses with the Error schema', () => {
    for (const [key, op] of apiOperations()) {
      for (const status of ['400', '401', '404']) {
        const schema = op.responses[status]?.content?.['application/json']?.schema
        expect(schema?.$ref, `${key} ${status}`).toBe('#/components/schemas/Error')
      }
    }
    expect(doc.components.schemas.Error.properties).toMatchObject({
      error: { type: 'string' },
      statusCode: { type: 'integer' },
      message: { type: 'string' },
    })
  })

  it("documents the upstream nested paths as deprecated aliases with the flat routes' request and answers", () => {
    const aliases = [
      ['POST /api/panels/{panelId}/datasources/{id}/sync', 'POST /api/datasources/{id}/sync'],
      ['PUT /api/panels/{panelId}/datasources/{id}', 'PUT /api/datasources/{id}'],
      ['DELETE /api/panels/{panelId}/datasources/{id}', 'DELETE /api/datasources/{id}'],
      ['PUT /api/panels/{panelId}/columns/{id}', 'PUT /api/columns/{id}'],
      ['DELETE /api/panels/{panelId}/columns/{id}', 'DELETE /api/columns/{id}'],
    ]
    const byKey = new Map(operations(doc))
    for (const [alias, flat] of aliases) {
      const [nested, original] = [byKey.get(alias) as any, byKey.get(flat) as any]
      expect(nested?.deprecated, alias).toBe(true)
      expect(original.deprecated, flat).toBeUndefined()
      // Paths in descriptions are relative to the /api mount, like the other descriptions.
      expect(nested.description, alias).toContain(`Deprecated alias of \`${flat.replace(' /api/', ' /')}\``)
      expect(nested.responses, alias).toEqual(original.responses)
      expect(nested.requestBody, alias).toEqual(original.requestBody)
      const params = (op: any, where: string) => op.parameters.filter((p: any) => p.in === where).map((p: any) => p.name)
      expect(params(nested, 'path'), alias).toEqual(['panelId', 'id'])
      expect(params(nested, 'query'), alias).toEqual(params(original, 'query'))
    }
  })

  it('documents /health without security', () => {
    const health = doc.paths['/health'].get
    expect(health.tags).toEqual(['Health'])
    expect(health.security ?? []).toEqual([])
    expect(Object.keys(health.responses)).toEqual(expect.arrayContaining(['200', '503']))
  })
})

describe('GET /docs/json', () => {
  it('serves the same valid document', async () => {
    const res = await t.app.request('/docs/json')
    expect(res.status).toBe(200)
    const same = await res.json()
    await expect(SwaggerParser.validate(structuredClone(same))).resolves.toBeTruthy()
    expect(same).toEqual(doc)
  })
})

describe('GET /docs', () => {
  it('answers the Swagger UI page pointing at the document', async () => {
    const res = await t.app.request('/docs')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/text\/html/)
    const html = await res.text()
    expect(html).toMatch(/swagger-ui/i)
    expect(html).toContain('/openapi.json')
  })
})
