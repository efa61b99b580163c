import { z } from 'zod'

/** Environment variables as a runtime hands them over (Node's and Deno's environment, a Worker's env). */
export type EnvRecord = Record<string, string | undefined>

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? fallback : v === 'true' || v === '1'))

const int = (fallback: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).optional().default(fallback)

const rateLimitSpec = (fallback: string) =>
  z
    .string()
    .regex(/^[1-9]\d*\/[1-9]\d*$/, 'expected "<requests>/<window seconds>", e.g. 100/900')
    .optional()
    .transform((v) => {
      const [limit, windowSeconds] = (v ?? fallback).split('/').map(Number)
      return { limit, windowSeconds }
    })

const ConfigSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).optional().default('development'),
    PORT: int(3001, 1, 65535),
    DATABASE_URL: z
      .string()
      .regex(/^(file:|libsql:|https?:|wss?:|:memory:$)/, 'expected file:…, :memory:, libsql://… or https://…')
      .optional()
      .default('file:./data/panels.db'),
    DATABASE_AUTH_TOKEN: z.string().optional(),
    JWT_SECRET: z.string().min(1).optional(),
    AUTH_DISABLED: bool(false),
    DEV_TENANT_ID: z.string().min(1).optional(),
    DEV_USER_ID: z.string().min(1).optional().default('dev-user'),
    DEV_USER_GROUPS: z.string().optional().default(''),
    SINGLE_TENANT_ID: z.string().min(1).optional(),
    CACHE_DRIVER: z.enum(['memory', 'redis', 'fs', 'kv']).optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'expected redis://… or rediss://…')
      .optional(),
    CACHE_TTL_SECONDS: int(3600, 1, 31_536_000),
    FILES_DIR: z.string().min(1).optional().default('./data/files'),
    UPLOAD_MAX_BYTES: int(100 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    IMPORT_MAX_BYTES: int(20 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    IMPORT_MAX_ROWS: int(200_000, 1, 10_000_000),
    ENCRYPTION_KEY: z.string().min(1).optional(),
    ALLOW_PRIVATE_NETWORK_SOURCES: bool(false),
    CORS_ORIGINS: z.string().optional(),
    RATE_LIMIT_ENABLED: z.enum(['true', 'false', '1', '0']).optional(),
    RATE_LIMIT_PANELS: rateLimitSpec('100/900'),
    RATE_LIMIT_SYNCS: rateLimitSpec('10/60'),
    RATE_LIMIT_VIEWS: rateLimitSpec('200/900'),
    SYNC_SCHEDULER: bool(true),
    SYNC_INTERVAL_SECONDS: int(60, 5, 86_400),
    SYNC_TIMEOUT_SECONDS: int(900, 1, 86_400),
    SYNC_MAX_BYTES: int(2 * 1024 ** 3, 1024, 2 ** 50),
    SYNC_MAX_RECORDS: int(10_000_000, 1, 1_000_000_000),
    SYNC_INVOCATION_SECONDS: int(0, 0, 86_400),
    SHUTDOWN_TIMEOUT_SECONDS: int(10, 1, 3_600),
    LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).optional().default('info'),
    AUDIT_RETENTION_DAYS: int(2190, 1, 36_500),
    EVENTS_RETENTION_DAYS: int(7, 1, 36_500),
    EVENTS_RETENTION_MAX: int(1_000_000, 1, 1_000_000_000),
    EVENTS_POLL_INTERVAL_MS: int(1000, 10, 1000),
    EVENTS_PING_INTERVAL_MS: int(15_000, 50, 3_600_000),
    WEBHOOK_DISABLE_AFTER: int(20, 1, 10_000),
    WEBHOOK_TIMEOUT_MS: int(10_000, 100, 120_000),
    PUBLIC_BASE_URL: z
      .string()
      .regex(
        /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/,
        'expected an http(s) origin with an optional path, e.g. https://panels.example.org',
      )
      .optional()
      .transform((v) => v?.replace(/\/+$/, '')),
    EXPORT_TTL_HOURS: int(24, 1, 8760),
  })
  .superRefine(
    (env, ctx) => {
      if (env.CACHE_DRIVER === 'redis' && !env.REDIS_URL) {
        ctx.addIssue({ code: 'custom', path: ['REDIS_URL'], message: 'required when CACHE_DRIVER=redis' })
      }
      if (env.SINGLE_TENANT_ID && env.DEV_TENANT_ID && env.DEV_TENANT_ID !== env.SINGLE_TENANT_ID) {
        ctx.addIssue({ code: 'custom', path: ['DEV_TENANT_ID'], message: 'must equal SINGLE_TENANT_ID when both are set' })
      }
      if (env.NODE_ENV !== 'production') return
      if (!env.JWT_SECRET || env.JWT_SECRET.length < 32) {
        ctx.addIssue({
          code: 'custom',
          path: ['JWT_SECRET'],
          message: 'required in production, at least 32 characters',
        })
      }
      if (!env.ENCRYPTION_KEY) {
        ctx.addIssue({ code: 'custom', path: ['ENCRYPTION_KEY'], message: 'required in production' })
      }
      if (env.AUTH_DISABLED === true) {
        ctx.addIssue({
          code: 'custom',
          path: ['AUTH_DISABLED'],
          message: 'must not be true in production (development switch only)',
        })
      }
    },
    // Run even when a variable above failed, so one start-up message names every bad variable.
    { when: () => true },
  )

export interface RateLimitRule {
  limit: number
  windowSeconds: number
}

export interface Config {
  env: 'development' | 'production' | 'test'
  port: number
  databaseUrl: string
  databaseAuthToken?: string
  /** Undefined until the runtime entry fills in a development secret (production requires one). */
  jwtSecret?: string
  authDisabled: boolean
  devTenantId: string
  devUserId: string
  /** AUTH_DISABLED: the groups of requests without an X-User-Groups header. */
  devUserGroups: readonly string[]
  /** Single-tenant mode (embedded appliance): every request belongs to this tenant; others get 403. */
  singleTenantId?: string
  cacheDriver: 'memory' | 'redis' | 'fs' | 'kv'
  redisUrl?: string
  cacheTtlSeconds: number
  filesDir: string
  /**
   * The address other servers reach this service at (no trailing slash): FHIR Subscriptions'
   * notification URLs and the backport topic's canonical. Undefined when not configured.
   */
  publicBaseUrl?: string
  /** Hours an async export's files (`$viewdefinition-export`) are kept before they are removed. */
  exportTtlHours: number
  /** Largest file `PUT /api/datasources/{id}/file` accepts (413 beyond). */
  uploadMaxBytes: number
  /** Limits of one `POST /api/panels/{id}/import`: its file (or JSON body) in bytes, and its rows. */
  importLimits: { maxBytes: number; maxRows: number }
  encryptionKey?: string
  allowPrivateNetworkSources: boolean
  corsOrigins: string[]
  rateLimitEnabled: boolean
  rateLimits: { panels: RateLimitRule; syncs: RateLimitRule; views: RateLimitRule }
  syncScheduler: boolean
  /** Seconds between two runs of the scheduler loop (Node, Deno). */
  syncIntervalSeconds: number
  /** The service's own limits on one synchronisation (DATA-ENGINE: limits end a sync with an error). */
  /**
   * `invocationMs`: how long one invocation may carry a resumable read (a bulk export) before it
   * saves its progress and hands the run to a later tick; undefined: no limit (SYNC_INVOCATION_SECONDS 0).
   */
  syncLimits: { timeoutMs: number; maxBytes: number; maxRecords: number; invocationMs?: number }
  /**
   * The longest a graceful stop (SIGTERM, `deps.close()`) may take: open connections drained,
   * background work finished or handed back, the database closed (docs/operations.md).
   */
  shutdownTimeoutMs: number
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent'
  /**
   * The read audit (docs/audit.md). `reads` is always true from the environment: there is no
   * variable to turn the audit off. Only bench/views.ts sets it false on its own deps, to measure
   * the audit's cost beside a baseline in the same run.
   */
  audit: { retentionDays: number; reads: boolean }
  /**
   * The change feed's readers (docs/live.md): retention per tenant (days and count), how often a
   * stream reads the log without a wake-up (≤ 1 s), and the interval of the `: ping` comment.
   */
  events: { retentionDays: number; retentionMax: number; pollIntervalMs: number; pingIntervalMs: number }
  /**
   * Outbound webhooks (docs/live.md "Outbound webhooks"): consecutive failed deliveries after which
   * a subscription is disabled, and the time one attempt may take.
   */
  webhooks: { disableAfter: number; timeoutMs: number }
}

/** Thrown by parseConfig; `issues` names each bad variable. */
export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

/** Parses and validates the environment once, in the runtime entry. Pure: reads only `env`. */
export function parseConfig(env: EnvRecord): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  const parsed = ConfigSchema.safeParse(cleaned)
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? 'environment'), message: i.message })))
  }
  const e = parsed.data
  const production = e.NODE_ENV === 'production'
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    databaseAuthToken: e.DATABASE_AUTH_TOKEN,
    jwtSecret: e.JWT_SECRET,
    authDisabled: e.AUTH_DISABLED,
    devTenantId: e.DEV_TENANT_ID ?? e.SINGLE_TENANT_ID ?? 'dev-tenant',
    devUserId: e.DEV_USER_ID,
    devUserGroups: e.DEV_USER_GROUPS.split(',')
      .map((g) => g.trim())
      .filter(Boolean),
    singleTenantId: e.SINGLE_TENANT_ID,
    cacheDriver: e.CACHE_DRIVER ?? (e.REDIS_URL ? 'redis' : 'memory'),
    redisUrl: e.REDIS_URL,
    cacheTtlSeconds: e.CACHE_TTL_SECONDS,
    filesDir: e.FILES_DIR,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    exportTtlHours: e.EXPORT_TTL_HOURS,
    uploadMaxBytes: e.UPLOAD_MAX_BYTES,
    importLimits: { maxBytes: e.IMPORT_MAX_BYTES, maxRows: e.IMPORT_MAX_ROWS },
    encryptionKey: e.ENCRYPTION_KEY,
    allowPrivateNetworkSources: e.ALLOW_PRIVATE_NETWORK_SOURCES,
    corsOrigins: e.CORS_ORIGINS
      ? e.CORS_ORIGINS.split(',')
          .map((o) => o.trim())
          .filter(Boolean)
      : production
        ? []
        : ['*'],
    rateLimitEnabled:
      e.RATE_LIMIT_ENABLED === undefined ? production : e.RATE_LIMIT_ENABLED === 'true' || e.RATE_LIMIT_ENABLED === '1',
    rateLimits: { panels: e.RATE_LIMIT_PANELS, syncs: e.RATE_LIMIT_SYNCS, views: e.RATE_LIMIT_VIEWS },
    syncScheduler: e.SYNC_SCHEDULER,
    syncIntervalSeconds: e.SYNC_INTERVAL_SECONDS,
    syncLimits: {
      timeoutMs: e.SYNC_TIMEOUT_SECONDS * 1000,
      maxBytes: e.SYNC_MAX_BYTES,
      maxRecords: e.SYNC_MAX_RECORDS,
      invocationMs: e.SYNC_INVOCATION_SECONDS > 0 ? e.SYNC_INVOCATION_SECONDS * 1000 : undefined,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    logLevel: e.LOG_LEVEL,
    audit: { retentionDays: e.AUDIT_RETENTION_DAYS, reads: true },
    events: {
      retentionDays: e.EVENTS_RETENTION_DAYS,
      retentionMax: e.EVENTS_RETENTION_MAX,
      pollIntervalMs: e.EVENTS_POLL_INTERVAL_MS,
      pingIntervalMs: e.EVENTS_PING_INTERVAL_MS,
    },
    webhooks: { disableAfter: e.WEBHOOK_DISABLE_AFTER, timeoutMs: e.WEBHOOK_TIMEOUT_MS },
  }
}
