import { z } from '@hono/zod-openapi'
import type { DataSourceType } from '../../connectors/registry.ts'
import { TenantBody } from '../../http/router.ts'

/**
 * The OpenAPI description of each data-source type's `config`, for `/docs` only. Requests are not
 * validated with these schemas: the create and update routes validate `config` with the type's
 * connector (`configSchema`, 400s naming `config.<field>`), as they always did. tests/openapi.test.ts
 * keeps the two in step (the same fields and defaults, and every example accepted by its connector).
 */

const text = (description: string) => z.string().openapi({ description })
const count = (description: string) => z.number().int().openapi({ description })
/** An optional field with the value the connector uses when it is left out. */
const orDefault = <T extends z.ZodType>(schema: T, value: unknown) => schema.optional().openapi({ default: value })

/** `schedule` and `timezone`: read by the data source service for every type but `webhook`. */
const scheduleFields = {
  schedule: text('Cron expression (5 or 6 fields): the source also synchronises on this schedule').optional(),
  timezone: text('IANA time zone of `schedule` (default UTC)').optional(),
}

const keyField = text(
  'Field whose value identifies a record across syncs; without it the key is the resource id (FHIR), the primary key (database table) or a hash of the content',
).optional()

const retryFields = {
  timeout: orDefault(count('Milliseconds one request may take (at most 300000)'), 30_000),
  retryAttempts: orDefault(count('Retries of a request answered 429, 502, 503, 504 or failing on the network (at most 10)'), 2),
  retryDelay: orDefault(
    count(
      'Base delay in milliseconds of the exponential backoff between retries (with jitter); a Retry-After answer is honoured',
    ),
    500,
  ),
}

const Authentication = z
  .object({
    type: z.enum(['bearer', 'basic', 'api-key', 'oauth2']),
    token: text('bearer: the token (a secret)').optional(),
    username: text('basic: the user name').optional(),
    password: text('basic: the password (a secret)').optional(),
    apiKey: text('api-key: the key (a secret)').optional(),
    apiKeyHeader: text('api-key: the header that carries it (default X-API-Key)').optional(),
    clientId: text('oauth2 client credentials: the client id').optional(),
    clientSecret: text('oauth2: the client secret (a secret)').optional(),
    tokenUrl: text('oauth2: the token endpoint (http or https)').optional(),
    scope: text('oauth2: the scope asked for').optional(),
    tokenAuthMethod: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
  })
  .openapi('DataSourceAuthentication', {
    description:
      'How an `api` or `fhir` source authenticates. Secrets are encrypted at rest and answered as "<SECRET>"; the token of oauth2 is kept until it expires.',
  })

const FILE_FORMATS = {
  file: ['csv', 'tsv', 'json', 'ndjson', 'xml', 'excel', 'xlsx'],
  csv: ['csv', 'tsv'],
  json: ['json', 'ndjson'],
  excel: ['excel', 'xlsx'],
} as const
type FileType = keyof typeof FILE_FORMATS

const fileConfig = (type: FileType, refId: string) => {
  const formats = FILE_FORMATS[type]
  const format = z.enum(formats).openapi({
    description:
      type === 'file'
        ? 'How the file is read'
        : `How the file is read (default ${formats[0]}); a ${type} source reads ${formats.join(' or ')} only`,
  })
  return z
    .object({
      filePath: text(
        'Path under the files folder (FILES_DIR), relative, without ".." or ":"; `PUT /datasources/{id}/file` uploads a file and sets it',
      ),
      format: type === 'file' ? format : format.optional(),
      hasHeaders: orDefault(z.boolean().openapi({ description: 'The first row (after skipRows) names the fields' }), true),
      delimiter: text('csv/tsv field delimiter (default "," for csv, tab for tsv)').optional(),
      quoteChar: text('csv quote character (default ")').optional(),
      escapeChar: text('csv escape character inside quotes').optional(),
      encoding: text('Text encoding, e.g. utf-8 (default), latin1, utf-16le').optional(),
      sheetName: text('excel: the sheet to read').optional(),
      sheetIndex: count('excel: the 0-based sheet to read (default the first)').optional(),
      jsonPath: text('json/xml: where the records are, e.g. $.data.items or entry[*].resource').optional(),
      skipRows: orDefault(count('Lines skipped before the header row'), 0),
      maxRows: count('Read at most this many records; a cut is reported on the sync run').optional(),
      allowedExtensions: z.array(z.string()).optional().openapi({ description: 'Extensions the file may have, e.g. ["csv"]' }),
      maxFileSize: count('Largest file in bytes').optional(),
      keyField,
      ...scheduleFields,
    })
    .openapi(refId, { description: `Config of a \`${type}\` source: one file read in batches.` })
}

const ApiConfig = z
  .object({
    apiEndpoint: text('The http(s) URL to read'),
    method: orDefault(z.enum(['GET', 'POST', 'PUT', 'PATCH']).openapi({ description: 'Case-insensitive' }), 'GET'),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .openapi({ description: 'Request headers; credential headers are secrets' }),
    body: z.unknown().optional().openapi({ description: 'Request body (JSON) for POST, PUT or PATCH' }),
    authentication: Authentication.optional(),
    responseFormat: z.enum(['json', 'xml', 'csv']).optional().openapi({ description: 'Default: from the Content-Type answered' }),
    dataPath: text(
      'Where the records are in a JSON answer, e.g. $.data.items (default: the answer when it is an array, else its first array among data, items, results)',
    ).optional(),
    hasHeaders: orDefault(z.boolean().openapi({ description: 'csv answers: the first row names the fields' }), true),
    delimiter: text('csv answers: the field delimiter').optional(),
    paginationStyle: z.enum(['offset', 'cursor', 'page']).optional().openapi({
      description: 'offset sends offset/limit, page sends page/pageSize, cursor follows the next cursor; none: one request',
    }),
    pageSize: count('Records per page (default 100 for offset and page)').optional(),
    maxPages: count('Read at most this many pages; a cut is reported on the sync run').optional(),
    offsetParam: text('Name of the offset parameter').optional(),
    limitParam: text('Name of the limit parameter').optional(),
    pageParam: text('Name of the page parameter').optional(),
    pageSizeParam: text('Name of the page size parameter').optional(),
    cursorParam: text('Name of the cursor parameter').optional(),
    cursorPath: text('Where the next cursor is in an answer, e.g. $.meta.next').optional(),
    ...retryFields,
    keyField,
    ...scheduleFields,
  })
  .openapi('ApiDataSourceConfig', {
    description: 'Config of an `api` source: an HTTP endpoint answering JSON, XML or CSV, page by page.',
  })

const FhirConfig = z
  .object({
    baseUrl: text('The FHIR R4 server base, e.g. https://fhir.example.org/r4'),
    mode: z.enum(['search', 'bulk']).optional().openapi({
      description: '`search` (default): FHIR searches. `bulk`: a Bulk Data `$export` of the server (then `bulk` is required)',
    }),
    bulk: z
      .object({
        level: z
          .enum(['system', 'patient', 'group'])
          .openapi({ description: 'Kick-off at `$export`, `Patient/$export` or `Group/{groupId}/$export`' }),
        groupId: text('The Group exported (level group only)').optional(),
        types: z.array(z.string()).optional().openapi({ description: '`_type`: the resource types exported' }),
        typeFilters: z
          .array(z.string())
          .optional()
          .openapi({ description: '`_typeFilter` searches, e.g. Observation?category=vital-signs, one parameter each' }),
        since: z.enum(['auto', 'none']).openapi({
          description:
            "`auto`: the next sync exports only the changes since the last manifest's transactionTime (stored as lastSyncValue) and applies its deletions; `none`: every sync is a whole export",
        }),
      })
      .optional()
      .openapi({ description: 'The Bulk Data export of a source in mode bulk (docs/connectors-fhir.md)' }),
    subscription: z
      .object({
        topic: text('The SubscriptionTopic canonical (R4 Subscriptions Backport); exactly one of topic and criteria').optional(),
        criteria: text('Classic R4 criteria, e.g. Observation?code=http://loinc.org|8867-4').optional(),
        filters: z
          .array(z.string())
          .optional()
          .openapi({ description: 'The topic filters, each Type?param=value (backport filter criteria); with topic only' }),
        payload: z.enum(['id-only', 'full-resource']).openapi({
          description: '`full-resource`: notifications carry the resources; `id-only`: the service reads each one',
        }),
        heartbeatSeconds: count('The heartbeat period asked for (10 to 86400; default 60)').optional(),
        enabled: orDefault(
          z.boolean().openapi({
            description:
              'The live feed switch. false: the upstream Subscription is deleted and POST /fhir-notify/{token} answers 409 (nothing changes); the tick neither checks nor catches it up, while a `schedule` still runs full syncs. true again: a new Subscription is made and a catch-up search (_lastUpdated) brings what changed while it was off',
          }),
          true,
        ),
      })
      .optional()
      .openapi({
        description:
          'Search mode: a live source. The service registers a rest-hook Subscription at the server and applies its notifications at once (needs PUBLIC_BASE_URL; docs/connectors-fhir.md)',
      }),
    lastSyncValue: text("Mode bulk with since auto: the last applied export's transactionTime (set by the service)").optional(),
    resourceType: text('The resource type searched, e.g. Patient (or resourceTypes); not used in mode bulk').optional(),
    resourceTypes: z.array(z.string()).optional().openapi({ description: 'Several resource types, each searched in turn' }),
    searchParams: z
      .union([z.string(), z.record(z.string(), z.unknown())])
      .optional()
      .openapi({ description: 'Search parameters: a query string or an object (a list value repeats the parameter)' }),
    pageSize: count('_count of each search page (1 to 1000)').optional(),
    maxPages: count('Read at most this many pages per resource type').optional(),
    authentication: Authentication.optional(),
    ...retryFields,
    timeout: orDefault(
      count(
        'Search mode: milliseconds one request may take (at most 300000). Bulk mode: milliseconds the whole export may take, kick-off to last byte across resumed invocations (3600000 when left out, at most 86400000; each request gets at most 300000 of it)',
      ),
      30_000,
    ),
    keyField,
    ...scheduleFields,
  })
  .openapi('FhirDataSourceConfig', {
    description:
      'Config of a `fhir` source: a FHIR R4 search, following the Bundle next links, kept live by a FHIR Subscription when `subscription` is given, or (mode bulk) a Bulk Data $export streamed as NDJSON. Records are keyed Type/id.',
  })

const DatabaseConfig = z
  .object({
    connectionString: text(
      'postgres:// or postgresql:// (PostgreSQL), file:<path under the files folder> or libsql:// (SQLite/libSQL); credentials in it are secrets',
    ),
    schema: text('PostgreSQL schema of `table`').optional(),
    table: text('The table to read (or query)').optional(),
    query: text('One read-only SELECT (or table)').optional(),
    batchSize: orDefault(count('Rows per batch (1 to 10000)'), 1000),
    timeout: orDefault(count('Milliseconds each statement may take'), 30_000),
    poolSize: orDefault(count('Connections (1 to 10)'), 1),
    sslMode: z.enum(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']).optional(),
    username: text('User, when not in the connection string').optional(),
    password: text('Password (a secret)').optional(),
    authToken: text('libsql:// auth token (a secret)').optional(),
    incrementalColumn: text('Read only rows whose column is greater than lastSyncValue; updates rows by key').optional(),
    lastSyncValue: z
      .union([z.string(), z.number()])
      .nullable()
      .optional()
      .openapi({ description: 'Where the next incremental read starts; the service advances it' }),
    keyField: text(
      'Field that identifies a row (default: the primary key of `table`); required for an incremental query',
    ).optional(),
    ...scheduleFields,
  })
  .openapi('DatabaseDataSourceConfig', {
    description: 'Config of a `database` source: exactly one of `table` or `query`, read in batches.',
  })

const WebhookConfig = z
  .object({
    endpoint: text('URL-safe slug, unique in the service: events are posted to POST /api/webhooks/{endpoint}'),
    secret: text('HMAC-SHA256 key of the signature (a secret); required when verifySignature').optional(),
    events: z
      .array(z.enum(['data.created', 'data.updated', 'data.deleted', 'sync.started', 'sync.completed', 'sync.failed']))
      .openapi({ description: 'The event kinds accepted' }),
    verifySignature: orDefault(z.boolean().openapi({ description: 'Refuse (401) deliveries without a valid signature' }), true),
    signatureHeader: orDefault(text('Header carrying sha256=<hex> of the raw body'), 'X-Signature-256'),
    dataPath: text('Where the records are inside an event (default: its data)').optional(),
    batchEvents: orDefault(z.boolean().openapi({ description: 'A delivery is an array of events' }), false),
    keyField: orDefault(text('Field that identifies a record'), 'id'),
    retryAttempts: count("The sender's retry policy, kept for reference").optional(),
    retryDelay: count("The sender's retry delay, kept for reference").optional(),
  })
  .openapi('WebhookDataSourceConfig', {
    description: 'Config of a `webhook` source: records are pushed to the service, so it has no schedule.',
  })

const ImportConfig = z.object({}).openapi('ImportDataSourceConfig', {
  description:
    'An `import` source holds the rows imported by `POST /panels/{panelId}/import`, which creates it with an empty config. It cannot be created, configured or synchronised by hand: such a request answers 400.',
})

/** Per type: its config schema and an example body of `POST /panels/{panelId}/datasources`. */
export const DATA_SOURCE_CONFIG_DOCS: Record<DataSourceType, { config: z.ZodType; example: Record<string, unknown> }> = {
  file: {
    config: fileConfig('file', 'FileDataSourceConfig'),
    example: { filePath: 'uploads/patients.csv', format: 'csv', hasHeaders: true, keyField: 'mrn' },
  },
  csv: {
    config: fileConfig('csv', 'CsvDataSourceConfig'),
    example: {
      filePath: 'exports/patients.csv',
      delimiter: ';',
      encoding: 'latin1',
      schedule: '0 6 * * *',
      timezone: 'Europe/Paris',
    },
  },
  json: {
    config: fileConfig('json', 'JsonDataSourceConfig'),
    example: { filePath: 'exports/bundle.json', jsonPath: '$.entry[*].resource' },
  },
  excel: {
    config: fileConfig('excel', 'ExcelDataSourceConfig'),
    example: { filePath: 'reports/worklist.xlsx', sheetName: 'Patients', skipRows: 2 },
  },
  api: {
    config: ApiConfig,
    example: {
      apiEndpoint: 'https://api.example.org/patients',
      method: 'GET',
      dataPath: '$.data',
      paginationStyle: 'page',
      pageSize: 200,
      authentication: { type: 'bearer', token: 'eyJhbGciOi…' },
      schedule: '*/30 * * * *',
    },
  },
  fhir: {
    config: FhirConfig,
    example: {
      baseUrl: 'https://fhir.example.org/r4',
      resourceType: 'Patient',
      searchParams: { active: 'true', _sort: 'family' },
      pageSize: 100,
      authentication: { type: 'oauth2', clientId: 'panels', clientSecret: 's3cr3t', tokenUrl: 'https://auth.example.org/token' },
    },
  },
  database: {
    config: DatabaseConfig,
    example: {
      connectionString: 'postgres://reader@db.example.org:5432/clinic',
      password: 's3cr3t',
      schema: 'public',
      table: 'patients',
      incrementalColumn: 'updated_at',
      schedule: '0 * * * *',
    },
  },
  webhook: {
    config: WebhookConfig,
    example: {
      endpoint: 'lab-results-7',
      secret: 'a-long-random-secret',
      events: ['data.created', 'data.updated', 'data.deleted'],
      dataPath: 'data',
    },
  },
  import: { config: ImportConfig, example: {} },
}

const typeName = (type: string) => type[0].toUpperCase() + type.slice(1)
const TYPES = Object.keys(DATA_SOURCE_CONFIG_DOCS) as DataSourceType[]
const ref = (refId: string) => ({ $ref: `#/components/schemas/${refId}` })

const createVariant = (type: DataSourceType) => {
  const { config, example } = DATA_SOURCE_CONFIG_DOCS[type]
  const refId = `Create${typeName(type)}DataSource`
  const schema = z.object({ type: z.literal(type), config, ...TenantBody }).openapi(refId, {
    example: { type, config: example },
    ...(type === 'import'
      ? { description: 'Documented for completeness: always answered 400 (see ImportDataSourceConfig)' }
      : {}),
  })
  return { type, refId, schema }
}

const updateVariant = (type: DataSourceType) => {
  const refId = `Update${typeName(type)}DataSource`
  const schema = z
    .object({ type: z.literal(type), config: DATA_SOURCE_CONFIG_DOCS[type].config.optional(), ...TenantBody })
    .openapi(refId, {
      description: `Makes the source a \`${type}\` source; the config, sent or kept, must then be one of a ${type} source`,
    })
  return { refId, schema }
}

const UpdateKeepingType = z
  .object({
    config: z.record(z.string(), z.unknown()).optional().openapi({
      description: 'The new config, checked against the source\'s current type; "<SECRET>" keeps a stored secret',
    }),
    ...TenantBody,
  })
  .openapi('UpdateDataSourceConfig', { description: 'The type stays as it is' })

const createVariants = TYPES.map(createVariant)
const updateVariants = TYPES.map(updateVariant)

/** The component schemas the two documented unions refer to; registered by the router. */
export const DATA_SOURCE_DOC_SCHEMAS: [string, z.ZodType][] = [
  ...createVariants.map((v): [string, z.ZodType] => [v.refId, v.schema]),
  ...updateVariants.map((v): [string, z.ZodType] => [v.refId, v.schema]),
  ['UpdateDataSourceConfig', UpdateKeepingType],
]

/**
 * The OpenAPI form of the create body: one schema per `type`. Given as `.openapi()` metadata with an
 * explicit `type`, which makes the generator print it instead of the schema that validates.
 */
export const CREATE_BODY_DOC = {
  type: 'object' as const,
  description:
    'One body per data-source `type`, each with its own `config`. Unknown config fields are kept (they pass through); a bad field is a 400 naming `config.<field>`. `csv`, `json` and `excel` are `file` sources with the format preset. Creating a source runs its first synchronisation (a `webhook` source waits for its first delivery).',
  oneOf: createVariants.map((v) => ref(v.refId)),
  discriminator: {
    propertyName: 'type',
    mapping: Object.fromEntries(createVariants.map((v) => [v.type, `#/components/schemas/${v.refId}`])),
  },
  example: { type: 'csv', config: DATA_SOURCE_CONFIG_DOCS.csv.example },
}

/** The OpenAPI form of the update body: a new type with its config, or a new config for the current type. */
export const UPDATE_BODY_DOC = {
  type: 'object' as const,
  description:
    'Send `type` (with or without `config`) to change the type, or `config` alone to replace the config of the current type. The config is replaced as a whole.',
  anyOf: [...updateVariants.map((v) => ref(v.refId)), ref('UpdateDataSourceConfig')],
  example: { config: { ...DATA_SOURCE_CONFIG_DOCS.api.example, authentication: { type: 'bearer', token: '<SECRET>' } } },
}
