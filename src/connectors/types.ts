import type { z } from 'zod'
import { EgressError } from '../lib/egress/errors.ts'
import type { ResolveHost } from '../lib/egress/guarded-fetch.ts'
import type { FileStore } from '../lib/files.ts'
import { FormatError } from '../lib/formats/errors.ts'
import type { Logger } from '../lib/logger.ts'
import type { OpenSqlite } from '../lib/sql.ts'

/**
 * One row read from a source (DATA-ENGINE: Records). `key` is optional: the sync derives one
 * (config `keyField`, else this key, else a hash of the content). `deleted` marks a removal in an
 * incremental read (webhook `data.deleted`): the record with that key is deleted.
 */
export interface SourceRecord {
  key?: string
  data: Record<string, unknown>
  deleted?: boolean
}

/** The service's own limits on one sync (DATA-ENGINE: limits end a sync with a clear error). */
export interface SyncLimits {
  /** Bytes one sync may read from a source (response bodies, files). */
  maxBytes: number
  /** Records one sync may read. */
  maxRecords: number
}

/** What a connector may use; outbound HTTP only through `fetch` (the guarded fetch). */
export interface ConnectorContext {
  /** Aborts when the source's time limit (config `timeout`) is reached or the sync is cancelled. */
  signal: AbortSignal
  fetch: (input: string | URL, init?: RequestInit) => Promise<Response>
  log: Logger
  now: () => Date
  /**
   * A small cache private to this data source (tenant and source in the key), e.g. an OAuth2 token
   * kept until it expires. Values must be JSON.
   */
  cache: {
    get<T>(key: string): Promise<T | undefined>
    set(key: string, value: unknown, ttlSeconds: number): Promise<void>
  }
  /** FILES_DIR; undefined on a runtime without a file system (then file features refuse). */
  files?: FileStore
  /** The runtime's name, for messages about what it lacks. */
  runtime: string
  /** ALLOW_PRIVATE_NETWORK_SOURCES: connections that bypass `fetch` (databases) check hosts with this. */
  allowPrivateNetwork: boolean
  /** The runtime's resolver, for the private-address check of non-HTTP connections. */
  resolveHost?: ResolveHost
  /** Opens SQLite/libSQL databases (`database` sources); undefined where the runtime has no driver. */
  openSqlite?: OpenSqlite
  limits: SyncLimits
  /** Incremental reads: the cursor stored by the last committed batch (config `lastSyncValue`). */
  cursor?: unknown
  /**
   * Incremental reads: the cursor the batch about to be yielded brings the source to. The sync
   * saves it only after that batch has committed (DATA-ENGINE: the cursor advances after commit).
   */
  advanceCursor(value: unknown): void
  /** A user cap (`maxRows`, `maxPages`) stopped the read early: reported, never silent. */
  truncated(message: string): void
  /**
   * True once a cancel of this sync was requested (one read of the run). The sync sees a cancel at
   * each batch boundary by itself; a connector that waits long before its first batch (a bulk
   * export's polls) asks here and stops: the sync then ends as cancelled.
   */
  cancelRequested?(): Promise<boolean>
  /**
   * For a read that may outlast one invocation (a bulk export): the progress the run saved, ways
   * to save more, and the time left. A connector that runs out of time throws `ReadSuspended`;
   * the run then stays open and a later tick (or sync call) reads on from the saved progress.
   */
  resume?: ReadResume
}

/** The progress of a resumable read (ConnectorContext.resume). */
export interface ReadResume {
  /** What this run saved last (JSON), undefined on its first invocation. */
  saved: unknown
  /** Saves progress now (nothing of it waits on a batch: a kick-off, a poll's answer, a manifest). */
  save(state: unknown): Promise<void>
  /** Saves progress with the commit of the batch about to be yielded (what that batch brings the read to). */
  saveWithNextBatch(state: unknown): void
  /** Milliseconds left of this invocation's budget (SYNC_INVOCATION_SECONDS); Infinity without one. */
  remainingMs(): number
  /**
   * True once the service is stopping: a run with saved progress is then handed back and resumed
   * by a later tick, so the read keeps what that needs (a bulk export's job on the server).
   */
  handedBack(): boolean
}

/**
 * A resumable read stops for now (its invocation's budget is spent, or the server asked to be
 * polled later than the budget allows): the run keeps its lease until `resumeAt`, then resumes.
 */
export class ReadSuspended extends Error {
  constructor(readonly resumeAt: Date) {
    super(`read suspended until ${resumeAt.toISOString()}`)
    this.name = 'ReadSuspended'
  }
}

/** A connector (STYLE §12): validates its config and reads records in batches. */
export interface Connector<C = any> {
  type: string
  /** Validated at create/update (400 naming `config.<field>`) and again before each sync. */
  configSchema: z.ZodType<C>
  /**
   * `full` (default): the read is a complete snapshot written as a new generation and switched
   * atomically. `incremental`: records are upserted (or deleted) by key in the current generation,
   * batch by batch, and the cursor advances after each committed batch.
   */
  mode?(config: C): 'full' | 'incremental'
  /**
   * An incremental read whose batches must not apply before it has read to its end (a bulk
   * export: a failure half-way applies nothing). Its batches are staged apart and applied, with
   * the cursor, once the read ends (datasources.sync-stage.ts).
   */
  appliesAtEnd?(config: C): boolean
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

/**
 * What a connector throws for a failure of the shared library it read with: a format error (the
 * parsers) or an egress refusal (the guarded fetch) becomes a ConnectorError with the same message;
 * anything else is returned as it is.
 */
export function asConnectorError(err: unknown): unknown {
  if (err instanceof FormatError || err instanceof EgressError) return new ConnectorError(err.message, { cause: err })
  return err
}
