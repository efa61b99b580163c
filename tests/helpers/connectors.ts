import type { Connector, ConnectorContext, SourceRecord } from '../../src/connectors/types.ts'
import { createGuardedFetch } from '../../src/lib/egress/guarded-fetch.ts'
import { createLogger } from '../../src/lib/logger.ts'

/** What a connector reported through its context while reading. */
export interface ReadReport {
  cursors: unknown[]
  truncated: string[]
}

/**
 * A connector context as the sync gives one: guarded fetch with loopback allowed (tests serve
 * fixtures on 127.0.0.1), silent logs, generous limits; `overrides` replace any part.
 */
export function testConnectorContext(overrides: Partial<ConnectorContext> = {}, report?: ReadReport): ConnectorContext {
  const cached = new Map<string, { value: unknown; expiresAt: number }>()
  return {
    cache: {
      async get<T>(key: string) {
        const hit = cached.get(key)
        return hit && hit.expiresAt > Date.now() ? (hit.value as T) : undefined
      },
      async set(key, value, ttlSeconds) {
        cached.set(key, { value, expiresAt: Date.now() + ttlSeconds * 1000 })
      },
    },
    signal: AbortSignal.timeout(10_000),
    fetch: createGuardedFetch({ fetch, allowPrivate: true }),
    log: createLogger('silent'),
    now: () => new Date(),
    runtime: 'node',
    allowPrivateNetwork: true,
    limits: { maxBytes: 100 * 1024 * 1024, maxRecords: 10_000_000 },
    advanceCursor: (value) => report?.cursors.push(value),
    truncated: (message) => report?.truncated.push(message),
    ...overrides,
  }
}

/** Reads a connector to its end with a parsed config; returns the batches and what it reported. */
export async function readAllBatches<C>(
  connector: Connector<C>,
  config: unknown,
  overrides: Partial<ConnectorContext> = {},
): Promise<{ batches: SourceRecord[][]; records: SourceRecord[]; report: ReadReport }> {
  const report: ReadReport = { cursors: [], truncated: [] }
  const batches: SourceRecord[][] = []
  for await (const batch of connector.read(connector.configSchema.parse(config), testConnectorContext(overrides, report))) {
    batches.push(batch)
  }
  return { batches, records: batches.flat(), report }
}
