import SwaggerParser from '@apidevtools/swagger-parser'
import { beforeAll, describe, expect, it } from 'vitest'
import { connectorFor, DATA_SOURCE_TYPES, IMPORT_ONLY_MESSAGE } from '../src/connectors/registry.ts'
import { scheduleIssues } from '../src/modules/datasources/datasources.schedule.ts'
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
        // An export's output file is ndjson or csv, never JSON.
        if (key === 'GET /api/$viewdefinition-export/{exportId}/{file}') continue
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

describe('the document around the operations', () => {
  it('describes every tag an operation uses, and no other', () => {
    const used = new Set(operations(doc).flatMap(([, op]) => (op as { tags?: string[] }).tags ?? []))
    const described = new Map((doc.tags as { name: string; description?: string }[]).map((t) => [t.name, t.description]))
    expect([...described.keys()].sort()).toEqual([...used].sort())
    for (const [name, description] of described) expect(description, name).toMatch(/\S{3,}/)
  })

  it('says in its description how to get a token and how to send it', () => {
    expect(doc.info.description).toContain('Authorization: Bearer')
    expect(doc.info.description).toContain('npm start')
    expect(doc.info.description).toContain('npm run -s token -- --tenant')
  })
})

/**
 * The object schema under a connector's config schema: file sources wrap theirs in a transform
 * (object → transform), fhir sources in a preprocess (transform → object).
 */
const objectOf = (schema: any): any => {
  if (schema._zod.def.type !== 'pipe') return schema
  const { in: first, out } = schema._zod.def
  return objectOf(first._zod.def.type === 'transform' ? out : first)
}
const unwrap = (schema: any): any => (schema._zod.def.type === 'optional' ? unwrap(schema._zod.def.innerType) : schema)
const defaultOf = (schema: any) => (schema._zod.def.type === 'default' ? schema._zod.def.defaultValue : undefined)
/** The fields of a zod object: each one's default and whether it must be sent. */
const fieldsOf = (object: any) =>
  Object.fromEntries(
    Object.entries(object.shape as Record<string, any>).map(([k, f]) => [
      k,
      { default: defaultOf(f), required: f._zod.optin === undefined },
    ]),
  )
/** The same from an OpenAPI object schema. */
const documentedFields = (schema: any) =>
  Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([k, p]: [string, any]) => [
      k,
      { default: p.default, required: (schema.required ?? []).includes(k) },
    ]),
  )
const component = (ref: string) => doc.components.schemas[ref.replace('#/components/schemas/', '')]

describe('data source bodies', () => {
  const variants = () => (doc.components.schemas.CreateDataSource.oneOf as { $ref: string }[]).map((r) => component(r.$ref))

  it('documents the create body as a union by type: one schema, config schema and example per data-source type', () => {
    const create = doc.components.schemas.CreateDataSource
    expect(create.discriminator.propertyName).toBe('type')
    expect(Object.keys(create.discriminator.mapping).sort()).toEqual([...DATA_SOURCE_TYPES].sort())
    expect(
      variants()
        .map((v) => v.properties.type.enum[0])
        .sort(),
    ).toEqual([...DATA_SOURCE_TYPES].sort())
    for (const type of DATA_SOURCE_TYPES) {
      const variant = component(create.discriminator.mapping[type])
      expect(variant.properties.type.enum, type).toEqual([type])
      expect(variant.required, type).toEqual(['type', 'config'])
      const config = component(variant.properties.config.$ref)
      expect(config.description, type).toContain(`\`${type}\``)
      expect(variant.example, type).toMatchObject({ type, config: expect.any(Object) })
    }
    expect(new Set(variants().map((v) => v.properties.config.$ref)).size).toBe(DATA_SOURCE_TYPES.length)
  })

  it("gives examples that the type's connector accepts (import: refused, as the service refuses it)", () => {
    for (const variant of variants()) {
      const { type, config } = variant.example
      const parsed = connectorFor(type)?.configSchema.safeParse(config)
      if (type === 'import') {
        expect(parsed?.error?.issues[0].message).toBe(IMPORT_ONLY_MESSAGE)
        continue
      }
      expect(parsed?.error?.issues, type).toBeUndefined()
      expect(scheduleIssues(config), type).toEqual([])
    }
  })

  it("documents each config with the connector's fields, defaults and required fields", () => {
    for (const variant of variants()) {
      const type = variant.properties.type.enum[0]
      const documented = documentedFields(component(variant.properties.config.$ref))
      if (type === 'import') {
        expect(documented).toEqual({})
        continue
      }
      const expected = fieldsOf(objectOf(connectorFor(type)?.configSchema))
      // Every type but webhook (pushed to) may carry a schedule, checked by the data source service.
      if (type !== 'webhook') Object.assign(expected, { schedule: { required: false }, timezone: { required: false } })
      // A plain `file` source must name its format (checked beside the field schema).
      if (type === 'file') expected.format.required = true
      expect(documented, type).toEqual(expected)
    }
    const auth = fieldsOf(unwrap(objectOf(connectorFor('api')?.configSchema).shape.authentication))
    expect(documentedFields(doc.components.schemas.DataSourceAuthentication)).toEqual(auth)
  })

  it('documents the update body as a new type with its config, or a new config for the current type', () => {
    const update = doc.components.schemas.UpdateDataSource
    const options = (update.anyOf as { $ref: string }[]).map((r) => component(r.$ref))
    expect(
      options
        .map((o) => o.properties.type?.enum?.[0])
        .slice(0, -1)
        .sort(),
    ).toEqual([...DATA_SOURCE_TYPES].sort())
    expect(options.at(-1).properties.type).toBeUndefined()
    for (const option of options.slice(0, -1)) {
      const type = option.properties.type.enum[0]
      expect(option.required, type).toEqual(['type'])
      expect(option.properties.config.$ref).toBe(
        component(doc.components.schemas.CreateDataSource.discriminator.mapping[type]).properties.config.$ref,
      )
    }
    expect(options.at(-1).properties.config.type).toBe('object')
  })
})
