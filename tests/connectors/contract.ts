import { describe, expect, it } from 'vitest'
import { type Connector, type ConnectorContext, ConnectorError, type SourceRecord } from '../../src/connectors/types.ts'
import { readAllBatches } from '../helpers/connectors.ts'

/**
 * The contract every connector meets (STYLE §12), run over each one as unstorage's `testDriver`
 * runs over each driver (contract.*.test.ts): config errors name the fields, the signal stops a
 * read, limits and caps are reported, failure messages are safe to show, keys are stable. Each
 * connector's own tests add what is particular to it. An item that does not apply says why in
 * the contract (`notApplicable`) and defines no test; docs/connectors-contract.md lists them.
 */

/** Why an item does not apply to a connector. */
export interface NotApplicable {
  notApplicable: string
}

/** A config and the parts of the context a read of it needs (files, openSqlite, ...). */
export interface ReadSetup {
  config: Record<string, unknown>
  context?: Partial<ConnectorContext>
}

/** A failure forced on purpose, and what its message must not show. */
export interface Failure {
  what: string
  run: () => Promise<unknown>
  /** Secrets from the config (passwords, tokens, keys): absent also percent-encoded. */
  secrets: string[]
  /** Internal paths (the files root, a temp folder) the message must not name. */
  paths?: string[]
  /** The error the failure is reported with (default ConnectorError, which a sync shows as it is). */
  errorType?: new (
    ...args: any[]
  ) => Error
}

export interface ConnectorContract {
  name: string
  connector: Connector
  config: {
    /** Values of the wrong kind, and every field that must be named for them. */
    bad: { config: unknown; fields: string[] }
    /** Required fields left out, every one of which must be named at once. */
    missing: { config: unknown; fields: string[] }
  }
  /**
   * The records of one unchanged source at the clock given: a read, or for a push connector the
   * records a delivery parses into.
   */
  records: (now: () => Date) => Promise<SourceRecord[]>
  /**
   * Who keys the records: `own` (the connector, e.g. FHIR `Type/id`, a table's primary key), the
   * `field` each record must carry (the sync keys by it), or `content` (the sync hashes it).
   */
  keys: 'own' | { field: string } | 'content'
  /** A source that never answers (a silent server, a slow store or query). */
  signal: { hanging: () => ReadSetup } | NotApplicable
  limits:
    | {
        /** A source of `count` records, more than MAX_RECORDS and more than MAX_BYTES bytes. */
        source: () => ReadSetup
        count: number
        /** `refuses`: the connector ends the read with an error naming the limit; `sync`: it hands every record on and the sync's own count ends the sync. */
        maxRecords: 'refuses' | 'sync'
        maxBytes: 'refuses' | NotApplicable
        /** The user's cap (`maxRows`, `maxPages`): config added to `source`, the records it leaves. */
        cap: { config: Record<string, unknown>; field: string; records: number } | NotApplicable
      }
    | NotApplicable
  failures: () => Failure[]
}

export const MAX_RECORDS = 7
export const MAX_BYTES = 137
/** How long a stopped read may take to reject. */
const PROMPT_MS = 1500
const ABORT_AFTER_MS = 150
/** A signal test that outlives this has a read the signal did not stop. */
const TEST_MS = 5000

const notApplicable = (item: unknown): item is NotApplicable =>
  typeof item === 'object' && item !== null && 'notApplicable' in item

/** `ConnectorContract.records` of a pull connector: the records of a whole read at the clock given. */
export const readWith = (connector: Connector, setup: () => ReadSetup) => async (now: () => Date) => {
  const { config, context } = setup()
  return (await readAllBatches(connector, config, { ...context, now })).records
}

/** `Failure.run` of a read that must fail. */
export const failing =
  (connector: Connector, config: Record<string, unknown>, context: Partial<ConnectorContext> = {}) =>
  () =>
    readAllBatches(connector, config, context)

/** Defines the contract's tests for one connector. */
export function testConnector(contract: ConnectorContract) {
  const { connector } = contract
  const read = (setup: ReadSetup, context: Partial<ConnectorContext> = {}) =>
    readAllBatches(connector, setup.config, { ...setup.context, ...context })

  describe(`connector contract: ${contract.name}`, () => {
    describe('config', () => {
      const paths = (config: unknown) => {
        const parsed = connector.configSchema.safeParse(config)
        expect(parsed.success).toBe(false)
        return [...new Set(parsed.error?.issues.map((i) => i.path.join('.')))].sort()
      }

      it('names every bad field', () => {
        expect(paths(contract.config.bad.config)).toEqual([...contract.config.bad.fields].sort())
      })

      it('names every missing required field at once', () => {
        expect(paths(contract.config.missing.config)).toEqual([...contract.config.missing.fields].sort())
      })
    })

    // An item that does not apply defines no test: its reason stands in the contract and in docs/connectors-contract.md.
    const signal = contract.signal
    if (!notApplicable(signal))
      describe('signal', () => {
        it(
          'rejects promptly when the signal is already aborted',
          async () => {
            const started = Date.now()
            await expect(read(signal.hanging(), { signal: AbortSignal.abort() })).rejects.toThrow()
            expect(Date.now() - started).toBeLessThan(PROMPT_MS)
          },
          TEST_MS,
        )

        it(
          'stops a read waiting on its source when the signal aborts',
          async () => {
            const controller = new AbortController()
            let settled = false
            const pending = read(signal.hanging(), { signal: controller.signal }).finally(() => {
              settled = true
            })
            pending.catch(() => {})
            await new Promise((resolve) => setTimeout(resolve, ABORT_AFTER_MS))
            expect(settled).toBe(false)
            const aborted = Date.now()
            controller.abort()
            await expect(pending).rejects.toThrow()
            expect(Date.now() - aborted).toBeLessThan(PROMPT_MS)
          },
          TEST_MS,
        )
      })

    // An item that does not apply defines no test: its reason stands in the contract and in docs/connectors-contract.md.
    const limits = contract.limits
    if (!notApplicable(limits))
      describe('limits', () => {
        const generous = { maxBytes: 100 * 1024 * 1024, maxRecords: 10_000_000 }
        const naming = (limit: RegExp) => (err: unknown) => {
          expect(err).toBeInstanceOf(ConnectorError)
          expect((err as Error).message).toMatch(limit)
          expect((err as Error).message).toMatch(/limit/i)
        }

        it('reads the whole source within generous limits, reporting no truncation', async () => {
          const { records, report } = await read(limits.source(), { limits: generous })
          expect(records).toHaveLength(limits.count)
          expect(report.truncated).toEqual([])
        })

        if (limits.maxRecords === 'refuses') {
          it('ends the read with an error naming the record limit', async () => {
            const err = await read(limits.source(), { limits: { ...generous, maxRecords: MAX_RECORDS } }).catch((e) => e)
            naming(new RegExp(`\\b${MAX_RECORDS}\\b`))(err)
          })
        } else {
          it('hands every record on past the record limit, for the sync to count (never cut silently)', async () => {
            const { records, report } = await read(limits.source(), { limits: { ...generous, maxRecords: MAX_RECORDS } })
            expect(records).toHaveLength(limits.count)
            expect(report.truncated).toEqual([])
          })
        }

        if (!notApplicable(limits.maxBytes)) {
          it('ends the read with an error naming the byte limit', async () => {
            const err = await read(limits.source(), { limits: { ...generous, maxBytes: MAX_BYTES } }).catch((e) => e)
            naming(new RegExp(`\\b${MAX_BYTES} bytes\\b`))(err)
          })
        }

        const cap = limits.cap
        if (!notApplicable(cap)) {
          it(`stops at ${cap.field} and reports it through ctx.truncated`, async () => {
            const source = limits.source()
            const { records, report } = await read({ ...source, config: { ...source.config, ...cap.config } })
            expect(records).toHaveLength(cap.records)
            expect(report.truncated).toHaveLength(1)
            expect(report.truncated[0]).toContain(cap.field)
          })
        }
      })

    describe('failure messages', () => {
      it('are safe to show: no secret, stack trace or internal path', async () => {
        const failures = contract.failures()
        expect(failures.length).toBeGreaterThan(0)
        for (const failure of failures) {
          const err = await failure.run().then(
            () => undefined,
            (e: unknown) => e,
          )
          expect(err, failure.what).toBeInstanceOf(failure.errorType ?? ConnectorError)
          const shown = `${(err as Error).message}\n${JSON.stringify(err)}`
          for (const secret of failure.secrets) {
            expect(shown, `${failure.what}: a secret`).not.toContain(secret)
            expect(shown, `${failure.what}: a secret, encoded`).not.toContain(encodeURIComponent(secret))
          }
          for (const path of [...(failure.paths ?? []), process.cwd()]) {
            expect(shown, `${failure.what}: an internal path`).not.toContain(path)
          }
          expect(shown, `${failure.what}: a stack trace`).not.toMatch(/\n\s*at |\(?\S+\.[cm]?[jt]s:\d+:\d+\)?|node_modules/)
        }
      })
    })

    describe('keys', () => {
      const day = 24 * 60 * 60 * 1000
      const at = (ms: number) => () => new Date(ms)

      it('are the same, in the same order, when the same source is read twice at other times', async () => {
        const first = await contract.records(at(Date.UTC(2026, 0, 1)))
        const second = await contract.records(at(Date.UTC(2026, 0, 1) + 400 * day))
        expect(first.length).toBeGreaterThan(1)
        // Keys, and the content a sync derives keys from when a connector gives none.
        expect(second.map((r) => r.key)).toEqual(first.map((r) => r.key))
        expect(second).toEqual(first)
      })

      it(
        contract.keys === 'own'
          ? 'are given by the connector, one per record'
          : contract.keys === 'content'
            ? 'are left to the sync (it hashes the content)'
            : `come from the key field '${(contract.keys as { field: string }).field}' of every record`,
        async () => {
          const records = await contract.records(() => new Date())
          const keys = contract.keys
          if (keys === 'own') {
            const given = records.map((r) => r.key)
            expect(given.every((k) => typeof k === 'string' && k !== '')).toBe(true)
            expect(new Set(given).size).toBe(records.length)
          } else if (keys === 'content') {
            expect(records.every((r) => r.key === undefined)).toBe(true)
          } else {
            for (const r of records) {
              if (r.deleted && r.key !== undefined) continue
              expect(r.data[keys.field], JSON.stringify(r)).toBeDefined()
            }
          }
        },
      )
    })
  })
}
