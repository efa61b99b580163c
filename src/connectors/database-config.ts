import { z } from 'zod'
import { relativePathProblem } from '../lib/files.ts'
import { identifierProblem, readOnlyQueryProblem } from '../lib/sql.ts'

/** The configuration of a `database` source: its schema and what its connection string names. */

export const CONNECTOR_TYPE = 'database'
export const DEFAULT_BATCH_SIZE = 1000
export const DEFAULT_TIMEOUT_MS = 30_000

const SCHEMES = ['postgres:', 'postgresql:', 'file:', 'libsql:'] as const

const identifier = z.string().superRefine((v, ctx) => {
  const problem = identifierProblem(v)
  if (problem) ctx.addIssue({ code: 'custom', message: problem })
})

function connectionStringProblem(v: string): string | undefined {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(v)?.[0].toLowerCase()
  if (!scheme || !(SCHEMES as readonly string[]).includes(scheme)) {
    return 'must start with postgres://, postgresql://, file: (a path under the files folder) or libsql://'
  }
  if (scheme === 'file:') {
    const path = sqlitePath(v)
    if (path.startsWith('//')) return 'must be file:<path relative to the files folder>, like file:data/app.sqlite'
    const problem = relativePathProblem(path)
    if (problem) return `file path ${problem}`
  }
  return undefined
}

/** Config of a `database` source (spec §2.3 Database; DATA-ENGINE: Database). */
export const DatabaseConfig = z
  .object({
    connectionString: z.string().superRefine((v, ctx) => {
      const problem = connectionStringProblem(v)
      if (problem) ctx.addIssue({ code: 'custom', message: problem })
    }),
    schema: identifier.optional(),
    table: identifier.optional(),
    query: z
      .string()
      .superRefine((v, ctx) => {
        const problem = readOnlyQueryProblem(v)
        if (problem) ctx.addIssue({ code: 'custom', message: problem })
      })
      .optional(),
    batchSize: z.number().int().min(1).max(10_000).default(DEFAULT_BATCH_SIZE),
    /** Milliseconds: each statement's limit (and the connect limit); the whole sync has the service's. */
    timeout: z.number().int().min(100).max(3_600_000).default(DEFAULT_TIMEOUT_MS),
    poolSize: z.number().int().min(1).max(10).default(1),
    sslMode: z.enum(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']).optional(),
    username: z.string().min(1).optional(),
    password: z.string().optional(),
    authToken: z.string().optional(),
    incrementalColumn: identifier.optional(),
    lastSyncValue: z.union([z.string(), z.number(), z.null()]).optional(),
    keyField: z.string().min(1).optional(),
  })
  .passthrough()
  .superRefine(
    (c, ctx) => {
      if ((c.table === undefined) === (c.query === undefined)) {
        ctx.addIssue({ code: 'custom', path: ['table'], message: 'give exactly one of table or query' })
      }
    },
    { when: ({ value }) => typeof value === 'object' && value !== null }, // named even beside other bad fields
  )
  .superRefine((c, ctx) => {
    if (c.query !== undefined && c.incrementalColumn !== undefined && c.keyField === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['keyField'],
        message: 'required for an incremental query (rows are updated by this key)',
      })
    }
    if (c.schema !== undefined && !isPostgres(c.connectionString)) {
      ctx.addIssue({ code: 'custom', path: ['schema'], message: 'applies to PostgreSQL connections only' })
    }
  })

export type DatabaseConfig = z.infer<typeof DatabaseConfig>

export const isPostgres = (connectionString: string) => /^postgres(ql)?:/i.test(connectionString)

/** The root-relative path of a `file:` connection string (query string dropped). */
export const sqlitePath = (connectionString: string) => decodeURIComponent(connectionString.slice('file:'.length).split('?')[0])
