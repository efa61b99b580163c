import { describe, expect, it } from 'vitest'
import { ConfigError, type EnvRecord, parseConfig } from '../src/config.ts'

const PROD_SECRETS = { JWT_SECRET: 'x'.repeat(32), ENCRYPTION_KEY: 'an-encryption-key' }

/** The variables a ConfigError names for `env`, or [] when it parses. */
function badVariables(env: EnvRecord): string[] {
  try {
    parseConfig(env)
    return []
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as ConfigError).issues.map((i) => i.variable)
  }
}

describe('parseConfig defaults', () => {
  it('gives the documented defaults for an empty environment', () => {
    const config = parseConfig({})
    expect(config).toEqual({
      env: 'development',
      port: 3001,
      databaseUrl: 'file:./data/panels.db',
      databaseAuthToken: undefined,
      jwtSecret: undefined,
      authDisabled: false,
      devTenantId: 'dev-tenant',
      devUserId: 'dev-user',
      devUserGroups: [],
      cacheDriver: 'memory',
      redisUrl: undefined,
      cacheTtlSeconds: 3600,
      filesDir: './data/files',
      publicBaseUrl: undefined,
      exportTtlHours: 24,
      uploadMaxBytes: 100 * 1024 * 1024,
      importLimits: { maxBytes: 20 * 1024 * 1024, maxRows: 200_000 },
      encryptionKey: undefined,
      allowPrivateNetworkSources: false,
      corsOrigins: ['*'],
      rateLimitEnabled: false,
      rateLimits: {
        panels: { limit: 100, windowSeconds: 900 },
        syncs: { limit: 10, windowSeconds: 60 },
        views: { limit: 200, windowSeconds: 900 },
      },
      singleTenantId: undefined,
      syncScheduler: true,
      syncIntervalSeconds: 60,
      syncLimits: { maxBytes: 2 * 1024 ** 3, maxRecords: 10_000_000, timeoutMs: 900_000 },
      shutdownTimeoutMs: 10_000,
      logLevel: 'info',
      audit: { retentionDays: 2190, reads: true },
      events: { retentionDays: 7, retentionMax: 1_000_000, pollIntervalMs: 1000, pingIntervalMs: 15_000 },
      webhooks: { disableAfter: 20, timeoutMs: 10_000 },
    })
  })

  it('treats empty strings as unset', () => {
    const config = parseConfig({ PORT: '', DATABASE_URL: '', LOG_LEVEL: '' })
    expect(config.port).toBe(3001)
    expect(config.databaseUrl).toBe('file:./data/panels.db')
    expect(config.logLevel).toBe('info')
  })

  it('reads every variable it is given', () => {
    const config = parseConfig({
      PORT: '8080',
      DATABASE_URL: 'libsql://db.example.turso.io',
      DATABASE_AUTH_TOKEN: 'db-token',
      AUTH_DISABLED: '1',
      DEV_TENANT_ID: 't9',
      DEV_USER_ID: 'u9',
      CACHE_DRIVER: 'fs',
      CACHE_TTL_SECONDS: '60',
      FILES_DIR: '/srv/files',
      ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
      RATE_LIMIT_PANELS: '5/10',
      SYNC_SCHEDULER: 'false',
      SHUTDOWN_TIMEOUT_SECONDS: '30',
      LOG_LEVEL: 'debug',
      AUDIT_RETENTION_DAYS: '30',
      EVENTS_RETENTION_DAYS: '3',
      EVENTS_RETENTION_MAX: '500',
      EVENTS_POLL_INTERVAL_MS: '250',
      EVENTS_PING_INTERVAL_MS: '100',
      WEBHOOK_DISABLE_AFTER: '3',
      WEBHOOK_TIMEOUT_MS: '2500',
    })
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: 'libsql://db.example.turso.io',
      databaseAuthToken: 'db-token',
      authDisabled: true,
      devTenantId: 't9',
      devUserId: 'u9',
      cacheDriver: 'fs',
      cacheTtlSeconds: 60,
      filesDir: '/srv/files',
      allowPrivateNetworkSources: true,
      syncScheduler: false,
      shutdownTimeoutMs: 30_000,
      logLevel: 'debug',
      audit: { retentionDays: 30, reads: true },
      events: { retentionDays: 3, retentionMax: 500, pollIntervalMs: 250, pingIntervalMs: 100 },
      webhooks: { disableAfter: 3, timeoutMs: 2500 },
    })
    expect(config.rateLimits.panels).toEqual({ limit: 5, windowSeconds: 10 })
  })

  it('accepts every documented DATABASE_URL form', () => {
    for (const url of ['file:./x.db', ':memory:', 'libsql://x.turso.io', 'https://x.turso.io', 'wss://x.turso.io']) {
      expect(parseConfig({ DATABASE_URL: url }).databaseUrl).toBe(url)
    }
  })
})

describe('PUBLIC_BASE_URL', () => {
  it('drops a trailing slash and keeps a path', () => {
    expect(parseConfig({ PUBLIC_BASE_URL: 'https://panels.example.org/svc/' }).publicBaseUrl).toBe(
      'https://panels.example.org/svc',
    )
  })
})

describe('parseConfig invalid variables', () => {
  it.each([
    ['PORT', 'abc'],
    ['PORT', '0'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'http://x'],
    ['CACHE_TTL_SECONDS', '0'],
    ['CACHE_DRIVER', 'memcached'],
    ['LOG_LEVEL', 'loud'],
    ['SHUTDOWN_TIMEOUT_SECONDS', '0'],
    ['NODE_ENV', 'staging'],
    ['AUTH_DISABLED', 'yes'],
    ['RATE_LIMIT_PANELS', 'abc'],
    ['RATE_LIMIT_SYNCS', '10'],
    ['RATE_LIMIT_VIEWS', '0/60'],
    ['WEBHOOK_DISABLE_AFTER', '0'],
    ['WEBHOOK_TIMEOUT_MS', '50'],
    ['PUBLIC_BASE_URL', 'panels.example.org'],
    ['PUBLIC_BASE_URL', 'https://panels.example.org/?x=1'],
    ['EXPORT_TTL_HOURS', '0'],
  ])('names %s=%s in ConfigError.issues', (variable, value) => {
    expect(badVariables({ [variable]: value })).toEqual([variable])
  })

  it('names every bad variable at once, in a readable message', () => {
    let error: ConfigError | undefined
    try {
      parseConfig({ PORT: 'abc', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x' })
    } catch (err) {
      error = err as ConfigError
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect(error!.issues.map((i) => i.variable).sort()).toEqual(['DATABASE_URL', 'LOG_LEVEL', 'PORT'])
    expect(error!.message).toMatch(/^Invalid configuration:/)
    expect(error!.message).toContain('  PORT: ')
    expect(error!.message).toContain('  DATABASE_URL: expected file:')
  })
})

describe('parseConfig in production', () => {
  it('requires JWT_SECRET and ENCRYPTION_KEY', () => {
    expect(badVariables({ NODE_ENV: 'production' }).sort()).toEqual(['ENCRYPTION_KEY', 'JWT_SECRET'])
  })

  it('names the missing secrets together with other bad variables', () => {
    expect(badVariables({ NODE_ENV: 'production', PORT: 'abc' }).sort()).toEqual(['ENCRYPTION_KEY', 'JWT_SECRET', 'PORT'])
    expect(badVariables({ NODE_ENV: 'production', ...PROD_SECRETS, AUTH_DISABLED: 'yes' })).toEqual(['AUTH_DISABLED'])
  })

  it('refuses a JWT_SECRET shorter than 32 characters', () => {
    expect(badVariables({ NODE_ENV: 'production', ...PROD_SECRETS, JWT_SECRET: 'x'.repeat(31) })).toEqual(['JWT_SECRET'])
    expect(badVariables({ NODE_ENV: 'production', ...PROD_SECRETS })).toEqual([])
  })

  it('refuses AUTH_DISABLED=true', () => {
    expect(badVariables({ NODE_ENV: 'production', ...PROD_SECRETS, AUTH_DISABLED: 'true' })).toEqual(['AUTH_DISABLED'])
    expect(badVariables({ NODE_ENV: 'production', ...PROD_SECRETS, AUTH_DISABLED: 'false' })).toEqual([])
  })

  it('does not ask for secrets outside production', () => {
    expect(badVariables({ NODE_ENV: 'development' })).toEqual([])
    expect(badVariables({ NODE_ENV: 'test', AUTH_DISABLED: 'true' })).toEqual([])
  })
})

describe('parseConfig cache driver', () => {
  it('requires REDIS_URL when CACHE_DRIVER=redis', () => {
    expect(badVariables({ CACHE_DRIVER: 'redis' })).toEqual(['REDIS_URL'])
  })

  it('uses the redis driver when only REDIS_URL is set', () => {
    const config = parseConfig({ REDIS_URL: 'redis://127.0.0.1:6379' })
    expect(config.cacheDriver).toBe('redis')
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379')
    expect(parseConfig({ REDIS_URL: 'rediss://cache.example:6380' }).cacheDriver).toBe('redis')
  })

  it('keeps an explicit CACHE_DRIVER over REDIS_URL', () => {
    expect(parseConfig({ CACHE_DRIVER: 'memory', REDIS_URL: 'redis://127.0.0.1:6379' }).cacheDriver).toBe('memory')
  })
})

describe('parseConfig rate limiting', () => {
  it('is on by default only in production', () => {
    expect(parseConfig({}).rateLimitEnabled).toBe(false)
    expect(parseConfig({ NODE_ENV: 'test' }).rateLimitEnabled).toBe(false)
    expect(parseConfig({ NODE_ENV: 'production', ...PROD_SECRETS }).rateLimitEnabled).toBe(true)
  })

  it('follows RATE_LIMIT_ENABLED either way', () => {
    expect(parseConfig({ RATE_LIMIT_ENABLED: 'true' }).rateLimitEnabled).toBe(true)
    expect(parseConfig({ NODE_ENV: 'production', ...PROD_SECRETS, RATE_LIMIT_ENABLED: 'false' }).rateLimitEnabled).toBe(false)
  })

  it('reads "<requests>/<window seconds>" rules', () => {
    const config = parseConfig({ RATE_LIMIT_PANELS: '100/900', RATE_LIMIT_SYNCS: '3/1', RATE_LIMIT_VIEWS: '250/3600' })
    expect(config.rateLimits).toEqual({
      panels: { limit: 100, windowSeconds: 900 },
      syncs: { limit: 3, windowSeconds: 1 },
      views: { limit: 250, windowSeconds: 3600 },
    })
  })
})

describe('parseConfig CORS', () => {
  it('allows every origin in development and none by default in production', () => {
    expect(parseConfig({}).corsOrigins).toEqual(['*'])
    expect(parseConfig({ NODE_ENV: 'production', ...PROD_SECRETS }).corsOrigins).toEqual([])
  })

  it('splits CORS_ORIGINS on commas, trimming blanks', () => {
    const config = parseConfig({
      NODE_ENV: 'production',
      ...PROD_SECRETS,
      CORS_ORIGINS: ' https://a.example , https://b.example,, ',
    })
    expect(config.corsOrigins).toEqual(['https://a.example', 'https://b.example'])
  })
})
