import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import fhir, { FhirConfig } from '../../src/connectors/fhir.ts'
import { BULK_BATCH_SIZE, pollWait } from '../../src/connectors/fhir-bulk.ts'
import { kickOffUrl } from '../../src/connectors/fhir-bulk-config.ts'
import { isFhirInstant } from '../../src/connectors/fhir-types.ts'
import type { ConnectorContext, SourceRecord } from '../../src/connectors/types.ts'
import { MAX_LINE_LENGTH } from '../../src/lib/formats/lines.ts'
import { createLogger } from '../../src/lib/logger.ts'
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
    fx.state.polls = 1
    fx.state.retryAfter = '30'
    const started = Date.now()
    await expect(readAllBatches(fhir, bulk({}, { timeout: 2000 }))).rejects.toThrow(
      "The FHIR bulk export failed while polling the export status: The bulk export was not complete within the source's timeout (2000 ms): the FHIR server asked to poll again in 30 s (progress: 50% done)",
    )
    expect(Date.now() - started).toBeLessThan(1500)
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
  })

  it('stops a download past the timeout', async () => {
    for (const p of patients(40)) fx.put(p)
    fx.state.lineDelayMs = 50
    await expect(readAllBatches(fhir, bulk({ types: ['Patient'] }, { timeout: 1500 }))).rejects.toThrow(
      /^The bulk export ran past the source's timeout \(1500 ms\) reading the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson$/,
    )
  })

  for (const [what, retryAfter] of [
    ['Retry-After: 0', '0'],
    ['a Retry-After date in the past', 'date:-5000'],
  ]) {
    it(`polls a server answering ${what} no sooner than a second apart, backing off`, async () => {
      fx.state.polls = 1_000
      fx.state.retryAfter = retryAfter
      const started = Date.now()
      const { error } = await readUntilFailure(bulk({}, { timeout: 3500 }))
      // Polls at 0 s and 2 s; the next, 4 s later, would end past the 3.5 s the export may take.
      expect(error?.message).toBe(
        "The FHIR bulk export failed while polling the export status: The bulk export was not complete within the source's timeout (3500 ms): the next poll was due in 4 s (the FHIR server gave no usable Retry-After) (progress: 0% done)",
      )
      expect(Date.now() - started).toBeLessThan(3000)
      const job = fx.jobs.at(-1)!
      expect(job.pollTimes).toHaveLength(2)
      expect(job.pollTimes[1] - job.pollTimes[0]).toBeGreaterThanOrEqual(1995)
      expect(job.deleted).toBe(true)
    })
  }

  it('backs off while the server gives no usable Retry-After, and honours one of a second or more as given', () => {
    const waits = (asked: number | undefined) => [0, 1, 2, 3, 4, 5, 20].map((n) => pollWait(asked, n).waitMs)
    expect(waits(undefined)).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000])
    expect(waits(0)).toEqual(waits(undefined))
    expect(pollWait(999, 0)).toEqual({ waitMs: 2_000, told: false })
    expect(pollWait(1_000, 4)).toEqual({ waitMs: 1_000, told: true })
    expect(pollWait(120_000, 0)).toEqual({ waitMs: 120_000, told: true })
  })

  it('stops polling when the sync is cancelled', async () => {
    fx.state.polls = 1
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

describe('fhir connector: bulk manifest and lines checked', () => {
  const file = (name: string) => new RegExp(`^/fhir/bulk-files/job-\\d+/${name}\\.ndjson$`)
  /** The failure's message with the job's file paths written `<file>`. */
  const failed = async (config: unknown) => {
    const { error, batches, cursors } = await readUntilFailure(config)
    expect(batches).toEqual([])
    expect(cursors).toEqual([])
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
    return error?.message.replaceAll(/\/fhir\/bulk-files\/job-\d+\//g, '<file>/')
  }

  for (const bad of ['garbage', '2026-13-45T99:99:99Z', '2026-02-29T10:00:00Z', '2026-01-31T10:00:00']) {
    it(`fails on a manifest transactionTime ${JSON.stringify(bad)}, storing no cursor`, async () => {
      fx.state.transactionTime = bad
      expect(await failed(bulk())).toBe(
        `The FHIR bulk export failed while polling the export status: The FHIR server's completion manifest is not valid: transactionTime: ${JSON.stringify(bad)} is not a FHIR instant (such as 2026-01-31T12:00:00Z, with a real date and a zone)`,
      )
    })
  }

  it('takes a FHIR instant with a fraction or an offset as the cursor', async () => {
    fx.state.transactionTime = '2024-02-29T23:59:59.123+14:00'
    const { report } = await readAllBatches(fhir, bulk())
    expect(report.cursors).toEqual(['2024-02-29T23:59:59.123+14:00'])
  })

  it('tells FHIR instants from other text', () => {
    for (const ok of ['2026-01-31T12:00:00Z', '2024-02-29T00:00:00.5-05:00', '2026-12-31T23:59:60.123456789Z']) {
      expect(isFhirInstant(ok), ok).toBe(true)
    }
    for (const bad of ['garbage', '', '2026-01-31', '2026-01-31T12:00Z', '2026-00-10T00:00:00Z', '2025-02-29T00:00:00Z']) {
      expect(isFhirInstant(bad), bad).toBe(false)
    }
    expect(isFhirInstant('2026-04-31T00:00:00Z')).toBe(false)
    expect(isFhirInstant('2026-01-01T00:00:00+15:00')).toBe(false)
  })

  it('runs a stored cursor that is not a FHIR instant as a whole export, without _since', async () => {
    const warnings: string[] = []
    const config = fhir.configSchema.parse(bulk({}, { lastSyncValue: 'garbage' }))
    expect(fhir.mode?.(config)).toBe('full')
    const { records, report } = await readAllBatches(fhir, config, { log: createLogger('warn', (l) => warnings.push(l)) })
    expect(fx.jobs.at(-1)?.since).toBeUndefined()
    expect(records).toHaveLength(5)
    expect(report.cursors).toEqual([fx.jobs.at(-1)?.transactionTime])
    expect(warnings.join()).toContain('the stored bulk cursor is not a FHIR instant')
  })

  const badLines: [string, Record<string, unknown>, string][] = [
    [
      'a resourceType that is not a FHIR type',
      { resourceType: 'x/../y', id: 'z' },
      'Line 4 of the output file <file>/Patient.ndjson has resourceType "x/../y", not a FHIR resource type',
    ],
    [
      'an id that is not a FHIR id',
      { resourceType: 'Patient', id: '../z' },
      'Line 4 of the output file <file>/Patient.ndjson has id "../z", not a FHIR id (letters, digits, "-" and ".", at most 64, not dots only)',
    ],
    [
      'an id of dots only',
      { resourceType: 'Patient', id: '..' },
      'Line 4 of the output file <file>/Patient.ndjson has id "..", not a FHIR id (letters, digits, "-" and ".", at most 64, not dots only)',
    ],
    [
      'an id that is not a string',
      { resourceType: 'Patient', id: 7 },
      'Line 4 of the output file <file>/Patient.ndjson has id 7, not a FHIR id (letters, digits, "-" and ".", at most 64, not dots only)',
    ],
    [
      'another type than its file',
      { resourceType: 'Observation', id: 'obs-9' },
      'Line 4 of the output file <file>/Patient.ndjson is of type Observation, but the manifest lists the file as type "Patient"',
    ],
  ]
  for (const [what, line, message] of badLines) {
    it(`fails on an output line with ${what}, naming the line and the file`, async () => {
      fx.state.extraLines = { Patient: [line] }
      expect(await failed(bulk())).toBe(`The FHIR bulk export failed reading the output file <file>/Patient.ndjson: ${message}`)
    })
  }

  it('fails on an output line longer than MAX_LINE_LENGTH, naming the line and the file', async () => {
    fx.state.extraLines = { Patient: [{ resourceType: 'Patient', id: 'big', text: 'x'.repeat(MAX_LINE_LENGTH) }] }
    expect(await failed(bulk())).toBe(
      `The FHIR bulk export failed reading the output file <file>/Patient.ndjson: Line 4 is longer than the limit of ${MAX_LINE_LENGTH} characters`,
    )
  })

  it('skips, counts and logs resources of types not asked for: a typed file unread, else line by line', async () => {
    const warnings: string[] = []
    const log = createLogger('warn', (l) => warnings.push(l))
    const medication = { resourceType: 'Medication', id: 'med-1' }
    fx.state.extraLines = { Medication: [medication] }
    const before = fx.server.requests.length
    const typed = await readAllBatches(fhir, bulk({ types: ['Patient'] }), { log })
    expect(typed.records.map((r) => r.key)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    expect(fx.server.requests.slice(before).some((r) => r.url.endsWith('/Medication.ndjson'))).toBe(false)
    expect(JSON.parse(warnings[0])).toMatchObject({
      msg: 'skipped a bulk output file of a type not asked for',
      type: 'Medication',
    })
    expect(JSON.parse(warnings[0]).file).toMatch(file('Medication'))

    warnings.length = 0
    fx.state.untypedFiles = true
    fx.state.extraLines = { Patient: [medication, { ...medication, id: 'med-2' }, { resourceType: 'Group', id: 'g' }] }
    const untyped = await readAllBatches(fhir, bulk({ types: ['Patient'] }), { log })
    expect(untyped.records.map((r) => r.key)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    expect(warnings.map((w) => JSON.parse(w))).toMatchObject([
      { msg: 'skipped bulk output resources of types not asked for', skipped: { Medication: 2, Group: 1 } },
    ])

    // Without `types`, every type the server sends is kept.
    const all = await readAllBatches(fhir, bulk())
    expect(all.records.map((r) => r.key)).toContain('Medication/med-2')
  })

  it('fails on a deleted entry whose request.method is not a string; skips entries that delete nothing', async () => {
    const since = new Date(Date.now() - 60_000).toISOString()
    const entries = (...entry: unknown[]) => ({ resourceType: 'Bundle', type: 'transaction', entry })
    fx.state.extraDeleted = [
      entries({ request: { method: 'GET', url: 'Patient/pat-1' } }, {}, 3, {
        request: { method: 'delete', url: 'Patient/pat-9' },
      }),
    ]
    const { records } = await readAllBatches(fhir, bulk({}, { lastSyncValue: since }))
    expect(records.filter((r) => r.deleted)).toEqual([
      { key: 'Patient/pat-9', data: { resourceType: 'Patient', id: 'pat-9' }, deleted: true },
    ])
    const bad: [unknown, string][] = [
      [{ request: { method: 123, url: 'Patient/pat-1' } }, 'has an entry whose request.method is not a string'],
      [{ request: 'DELETE Patient/pat-1' }, 'has an entry whose request is not an object'],
      [{ request: { method: 'DELETE', url: 5 } }, 'deletes 5, not Type/id'],
      [{ request: { method: 'DELETE', url: 'Patient/..' } }, 'deletes "Patient/..", not Type/id'],
    ]
    for (const [entry, message] of bad) {
      fx.state.extraDeleted = [entries(), entries(entry)]
      expect(await failed(bulk({}, { lastSyncValue: since }))).toBe(
        `The FHIR bulk export failed reading the deleted file <file>/deleted.ndjson: Line 2 of the deleted file <file>/deleted.ndjson ${message}`,
      )
    }
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

  it('refuses unknown bulk fields, naming them, and a groupId of dots only', () => {
    const issues = (b: Record<string, unknown>) =>
      FhirConfig.safeParse(bulk(b)).error?.issues.map((i) => [i.path.join('.'), i.message])
    expect(issues({ type: ['Patient'], foo: 1 })).toEqual([['bulk', 'Unrecognized keys: "type", "foo"']])
    expect(issues({ level: 'group', groupId: '..' })).toEqual([
      ['bulk.groupId', 'must be a FHIR id (letters, digits, "-" and ".", at most 64, not dots only)'],
    ])
  })

  it('bounds a bulk export by timeout as a whole: an hour unless given, at most a day; a search request at most 5 min', () => {
    const parse = (c: Record<string, unknown>) => FhirConfig.safeParse(bulk({}, c))
    const paths = (c: Record<string, unknown>) => parse(c).error?.issues.map((i) => i.path.join('.'))
    expect(parse({}).data).toMatchObject({ timeout: 3_600_000 })
    expect(parse({ timeout: 86_400_000 }).data?.timeout).toBe(86_400_000)
    expect(paths({ timeout: 86_400_001 })).toEqual(['timeout'])
    expect(paths({ timeout: 0 })).toEqual(['timeout'])
    const search = (c: Record<string, unknown>) => FhirConfig.safeParse({ baseUrl: fx.baseUrl, resourceType: 'Patient', ...c })
    expect(search({}).data?.timeout).toBe(30_000)
    expect(search({ timeout: 300_000 }).success).toBe(true)
    expect(search({ timeout: 300_001 }).error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['timeout', "must be at most 300000 (a request's limit); up to 86400000 for a bulk export"],
    ])
  })
})
