import type { z } from 'zod'
import type { Logger } from '../lib/logger.ts'

/** One row read from a source (DATA-ENGINE: Records). `key` is optional: the sync derives one. */
export interface SourceRecord {
  key?: string
  data: Record<string, unknown>
}

/** What a connector may use; outbound HTTP only through `fetch` (the guarded fetch). */
export interface ConnectorContext {
  /** Aborts when the source's time limit (config `timeout`) is reached. */
  signal: AbortSignal
  fetch: (input: string | URL, init?: RequestInit) => Promise<Response>
  log: Logger
  now: () => Date
}

/** A connector (STYLE §12): validates its config and reads records in batches. */
export interface Connector<C = any> {
  type: string
  /** Validated at create/update (400 naming `config.<field>`) and again before each sync. */
  configSchema: z.ZodType<C>
  read(config: C, ctx: ConnectorContext): AsyncIterable<SourceRecord[]>
}

export const defineConnector = <C>(connector: Connector<C>): Connector<C> => connector

/**
 * A failure whose message is safe and useful to show as the source's `errorMessage` (no secrets,
 * no stack). Anything else thrown during a sync is reported generically and logged.
 */
export class ConnectorError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ConnectorError'
  }
}
