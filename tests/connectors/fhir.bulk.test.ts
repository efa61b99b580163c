import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import fhir, { FhirConfig } from '../../src/connectors/fhir.ts'
import { BULK_BATCH_SIZE } from '../../src/connectors/fhir-bulk.ts'
import { kickOffUrl } from '../../src/connectors/fhir-bulk-config.ts'
import type { ConnectorContext, SourceRecord } from '../../src/connectors/types.ts'
import { textLines } from '../../src/lib/formats/lines.ts'
import { readAllBatches, testConnectorContext } from '../helpers/connectors.ts'
import { type BulkServer, startBulkServer } from '../helpers/fhir-bulk-server.ts'
import { observations, patients } from '../helpers/fhir-server.ts'

let fx: BulkServer

beforeAll(async () => {
  fx = await startBulkServer()
})
afterAll(() => fx.close())
beforeEach(() => {
  fx.reset()
  for (const p of patients(3)) fx.put(p)
  for (const o of observations(2, 3)) fx.put(o)
})

const bulk = (extra: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => ({
  baseUrl: fx.baseUrl,
  mode: 'bulk',
  bulk: { level: 'system', since: 'auto', ...extra },
  ...config,
})

/** Reads until the end or a failure: the batches yielded before it, the cursors, the error. */
async function readUntilFailure(config: unknown, overrides: Partial<ConnectorContext> = {}) {
  const cursors: unknown[] = []
  const batches: SourceRecord[][] = []
  const ctx = testConnectorContext({ ...overrides, advanceCursor: (v) => cursors.push(v) })
  try {
    for await (const batch of fhir.read(fhir.configSchema.parse(config), ctx)) batches.push(batch)
  } catch (err) {
    return { batches, cursors, error: err as Error }
  }
  return { batches, cursors, error: undefined }
}

describe('fhir connector: bulk $export', () => {
  it('kicks off, polls, streams every output file keyed Type/id, deletes the job and reports transactionTime', async () => {
    const { records, report, batches } = await readAllBatches(
      fhir,
      bulk({ types: ['Patient', 'Observation'], typeFilters: ['Observation?status=final', 'Patient?active=true'] }),
    )
    const job = fx.jobs.at(-1)!
    const kick = fx.server.requests.find((r) => r.url === job.url)!
    expect(kick.headers).toMatchObject({ accept: 'application/fhir+json', prefer: 'respond-async' })
    expect(job.types).toEqual(['Patient', 'Observation'])
    expect(job.typeFilters).toEqual(['Observation?status=final', 'Patient?active=true'])
    expect(job.since).toBeUndefined()
    expect(records.map((r) => r.key).sort()).toEqual(
      ['Observation/obs-1', 'Observation/obs-2', 'Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'].sort(),
    )
    expect(records.find((r) => r.key === 'Patient/pat-2')?.data).toEqual(patients(3)[1])
    expect(report.cursors).toEqual([job.transactionTime])
    expect(batches).toHaveLength(1)
    expect(job.deleted).toBe(true)
    expect(fx.server.requests.at(-1)?.method).toBe('DELETE')
  })

  it('builds the kick-off URL of each level', () => {
    const parse = (b: Record<string, unknown>) => FhirConfig.parse({ baseUrl: 'https://fhir.test/r4/', mode: 'bulk', bulk: b })
    const of = (b: Record<string, unknown>, since?: string) => {
      const c = parse(b)
      return kickOffUrl({ baseUrl: c.baseUrl, bulk: c.bulk! }, since).href
    }
    expect(of({ level: 'system', since: 'none' })).toBe('https://fhir.test/r4/$export')
    expect(of({ level: 'patient', since: 'none', types: ['Patient', 'Condition'] })).toBe(
      'https://fhir.test/r4/Patient/$export?_type=Patient%2CCondition',
    )
    expect(of({ level: 'group', groupId: 'g-1', since: 'auto' }, '2026-01-01T00:00:00Z')).toBe(
      'https://fhir.test/r4/Group/g-1/$export?_since=2026-01-01T00%3A00%3A00Z',
    )
  })

  it('exports a group: only its members', async () => {
    fx.groups.cohort = ['Patient/pat-1']
    const { records } = await readAllBatches(fhir, bulk({ level: 'group', groupId: 'cohort' }))
    expect(records.map((r) => r.key).sort()).toEqual(['Observation/obs-1', 'Patient/pat-1'])
    expect(fx.jobs.at(-1)?.url).toBe('/fhir/Group/cohort/$export')
  })

  it('sends the bearer to the kick-off, the polls and the files when the manifest requires it', async () => {
    fx.state.token = 'bulk-token'
    const before = fx.server.requests.length
    const { records } = await readAllBatches(fhir, bulk({}, { authentication: { type: 'bearer', token: 'bulk-token' } }))
    expect(records).toHaveLength(5)
    const files = fx.server.requests.slice(before).filter((r) => r.url.includes('/bulk-files/'))
    expect(files.length).toBeGreaterThan(0)
    expect(files.every((r) => r.headers.authorization === 'Bearer bulk-token')).toBe(true)
    await expect(readAllBatches(fhir, bulk())).rejects.toThrow(
      'The FHIR bulk export failed at the kick-off: FHIR server responded 401 with an OperationOutcome: error: Authentication required: missing or invalid bearer token',
    )
  })

  it('sends no credentials to the files when the manifest does not require a token', async () => {
    fx.state.token = 'bulk-token'
    fx.state.openFiles = true
    const before = fx.server.requests.length
    const { records } = await readAllBatches(fhir, bulk({}, { authentication: { type: 'bearer', token: 'bulk-token' } }))
    expect(records).toHaveLength(5)
    const sent = fx.server.requests.slice(before)
    expect(sent.filter((r) => r.url.includes('/bulk-files/')).map((r) => r.headers.authorization)).toEqual([undefined, undefined])
    expect(
      sent.filter((r) => !r.url.includes('/bulk-files/')).every((r) => r.headers.authorization === 'Bearer bulk-token'),
    ).toBe(true)
  })

  it('sends _since from the stored cursor and yields the deleted resources', async () => {
    const first = await readAllBatches(fhir, bulk())
    const since = first.report.cursors[0] as string
    fx.put({ ...patients(3)[0], active: false })
    fx.remove('Observation', 'obs-2')
    const second = await readAllBatches(fhir, bulk({}, { lastSyncValue: since }))
    expect(fx.jobs.at(-1)?.since).toBe(since)
    expect(second.records).toEqual([
      { key: 'Patient/pat-1', data: { ...patients(3)[0], active: false } },
      { key: 'Observation/obs-2', data: { resourceType: 'Observation', id: 'obs-2' }, deleted: true },
    ])
    expect(fhir.mode?.(FhirConfig.parse(bulk({}, { lastSyncValue: since })))).toBe('incremental')
    expect(fhir.mode?.(FhirConfig.parse(bulk()))).toBe('full')
    expect(fhir.mode?.(FhirConfig.parse(bulk({ since: 'none' }, { lastSyncValue: since })))).toBe('full')
    // Nothing changed since: one empty batch carries the new cursor.
    const third = await readAllBatches(fhir, bulk({}, { lastSyncValue: fx.jobs.at(-1)?.transactionTime }))
    expect(third.batches).toEqual([[]])
    expect(third.report.cursors).toEqual([fx.jobs.at(-1)?.transactionTime])
  })

  it('yields full batches as they fill, the cursor with the last one only', async () => {
    const n = 2 * BULK_BATCH_SIZE + 200
    for (const p of patients(n)) fx.put(p)
    const { batches, records } = await readUntilFailure(bulk({ types: ['Patient'] })).then((r) => ({
      ...r,
      records: r.batches.flat(),
    }))
    expect(records).toHaveLength(n)
    expect(batches.map((b) => b.length)).toEqual([BULK_BATCH_SIZE, BULK_BATCH_SIZE, 200])
  })
})

describe('fhir connector: bulk polling', () => {
  it('never polls earlier than Retry-After (seconds)', async () => {
    fx.state.polls = 2
    fx.state.retryAfter = '1'
    await readAllBatches(fhir, bulk())
    const job = fx.jobs.at(-1)!
    expect(job.pollTimes).toHaveLength(3)
    for (let i = 1; i < job.pollTimes.length; i++) {
      expect(job.pollTimes[i] - job.pollTimes[i - 1]).toBeGreaterThanOrEqual(995)
    }
  })

  it('never polls earlier than Retry-After (an HTTP date)', async () => {
    fx.state.polls = 1
    fx.state.retryAfter = 'date:2000'
    await readAllBatches(fhir, bulk())
    const job = fx.jobs.at(-1)!
    expect(job.pollTimes[1] - job.pollTimes[0]).toBeGreaterThanOrEqual(job.askedWaitMs[0] - 5)
  })

  it('fails at once when the server asks to wait past the timeout, and deletes the job', async () => {
    fx.state.retryAfter = '30'
    const started = Date.now()
    await expect(readAllBatches(fhir, bulk({}, { timeout: 2000 }))).rejects.toThrow(
      "The FHIR bulk export failed while polling the export status: The bulk export was not complete within the source's timeout (2000 ms): the FHIR server asked to poll again in 30 s (progress: 50% done)",
    )
    expect(Date.now() - started).toBeLessThan(1500)
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
  })

  it("stops a download past the source's timeout", async () => {
    for (const p of patients(40)) fx.put(p)
    fx.state.lineDelayMs = 50
    await expect(readAllBatches(fhir, bulk({ types: ['Patient'] }, { timeout: 1500 }))).rejects.toThrow(
      /^The bulk export ran past the source's timeout \(1500 ms\) reading the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson$/,
    )
  })

  it('stops polling when the sync is cancelled', async () => {
    fx.state.retryAfter = '5'
    const cancel = new AbortController()
    setTimeout(() => cancel.abort(new Error('cancelled')), 300)
    const started = Date.now()
    const { error } = await readUntilFailure(bulk({}, { timeout: 20_000 }), { signal: cancel.signal })
    expect(error?.message).toBe('The FHIR bulk export failed while polling the export status: FHIR server request was cancelled')
    expect(Date.now() - started).toBeLessThan(2000)
    expect(fx.jobs.at(-1)?.pollTimes).toHaveLength(1)
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
  })
})

describe('fhir connector: bulk faults', () => {
  it('fails with the OperationOutcome of a refused kick-off', async () => {
    fx.state.kickOffOutcome = "The _type parameter names an unknown type 'Bogus'"
    const { error, batches } = await readUntilFailure(bulk())
    expect(error?.message).toBe(
      "The FHIR bulk export failed at the kick-off: FHIR server responded 400 with an OperationOutcome: error: The _type parameter names an unknown type 'Bogus'",
    )
    expect(batches).toEqual([])
  })

  it('fails with the OperationOutcome of a failed poll', async () => {
    fx.state.pollOutcome = 'Export job failed: disk full'
    const { error } = await readUntilFailure(bulk())
    expect(error?.message).toBe(
      'The FHIR bulk export failed while polling the export status: FHIR server responded 500 with an OperationOutcome: error: Export job failed: disk full',
    )
  })

  it('fails with the error files’ diagnostics before yielding a single record', async () => {
    fx.state.errorLines = ['Observation/obs-9 could not be read', 'Patient/pat-7 is locked']
    const { error, batches, cursors } = await readUntilFailure(bulk())
    expect(error?.message).toBe(
      'The FHIR bulk export reported 2 errors: error: Observation/obs-9 could not be read | error: Patient/pat-7 is locked',
    )
    expect(batches).toEqual([])
    expect(cursors).toEqual([])
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
  })

  it('fails cleanly on a broken download', async () => {
    for (const p of patients(20)) fx.put(p)
    fx.state.breakAfterLines = 5
    const { error, cursors } = await readUntilFailure(bulk({ types: ['Patient'] }))
    expect(error?.message).toMatch(
      /^The FHIR bulk export failed reading the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson: /,
    )
    expect(cursors).toEqual([])
  })
})

describe('fhir bulk config', () => {
  it('needs no resourceType, but a bulk block with a level and since; a group needs its id', () => {
    expect(FhirConfig.safeParse(bulk()).success).toBe(true)
    const issues = (c: unknown) => FhirConfig.safeParse(c).error?.issues.map((i) => [i.path.join('.'), i.message])
    expect(issues({ baseUrl: fx.baseUrl, mode: 'bulk' })).toEqual([['bulk', 'required for mode bulk']])
    expect(issues({ baseUrl: fx.baseUrl, mode: 'bulk', bulk: { level: 'group', since: 'auto' } })).toEqual([
      ['bulk.groupId', 'required for level group'],
    ])
    expect(
      issues({ baseUrl: fx.baseUrl, mode: 'bulk', bulk: { level: 'world', types: ['patient'], since: 'x' } })
        ?.map((i) => i[0])
        .sort(),
    ).toEqual(['bulk.level', 'bulk.since', 'bulk.types.0'])
    expect(
      issues({ baseUrl: fx.baseUrl, mode: 'bulk', bulk: { level: 'system', since: 'none', typeFilters: ['status=final'] } }),
    ).toEqual([['bulk.typeFilters.0', 'must be a search such as "Observation?status=final"']])
    expect(
      issues({ baseUrl: fx.baseUrl, resourceType: 'Patient', mode: 'search', bulk: { level: 'system', since: 'none' } }),
    ).toEqual([['bulk', 'only for mode bulk']])
    expect(issues({ baseUrl: fx.baseUrl, mode: 'scan', resourceType: 'Patient' })?.[0][0]).toBe('mode')
  })
})

describe('NDJSON lines', () => {
  it('splits lines across chunks, multi-byte characters included, without a trailing newline', async () => {
    const bytes = new TextEncoder().encode('{"a":"Müller"}\r\n\n{"b":2}\n{"c":"ç"}')
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 3) c.enqueue(bytes.slice(i, i + 3))
        c.close()
      },
    })
    const lines: { line: string; number: number }[] = []
    for await (const l of textLines(stream)) lines.push(l)
    expect(lines).toEqual([
      { line: '{"a":"Müller"}', number: 1 },
      { line: '{"b":2}', number: 3 },
      { line: '{"c":"ç"}', number: 4 },
    ])
  })
})
