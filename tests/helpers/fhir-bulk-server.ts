import type { ServerResponse } from 'node:http'
import { type FixtureServer, startJsonServer } from './servers.ts'

type Resource = Record<string, unknown> & { resourceType: string; id: string }

/** What the fixture's next exports do; tests change it between syncs (reset with `reset()`). */
export interface BulkState {
  /** Bearer token required on every request (kick-off, polls, files) when set; the manifest then says requiresAccessToken. */
  token?: string
  /** Files need no token (the manifest says requiresAccessToken: false) even when `token` is set. */
  openFiles?: boolean
  /** How many polls answer 202 before the manifest. */
  polls: number
  /** The 202's Retry-After: a number of seconds, 'date:<ms>' for an HTTP date that far ahead, or undefined for none. */
  retryAfter?: string
  /** The kick-off answers 400 with this OperationOutcome diagnostics. */
  kickOffOutcome?: string
  /** A poll (the first one) answers 500 with this OperationOutcome diagnostics. */
  pollOutcome?: string
  /** The manifest lists an error file with these OperationOutcome diagnostics, one line each. */
  errorLines: string[]
  /** Output files are cut off after this many lines (the connection is destroyed). */
  breakAfterLines?: number
  /** Each output line is sent after this many ms (a slow download). */
  lineDelayMs?: number
  /** With `lineDelayMs`: the delay comes before every this many lines only (default 1: every line). */
  lineDelayEvery?: number
  /** Output files answer this status (e.g. 500) with an OperationOutcome instead of their lines. */
  fileStatus?: number
  /** The manifest's transactionTime instead of the job's own (the job keeps its own for `_since`). */
  transactionTime?: string
  /** Lines sent after the exported resources of the output file of each name (listed even when empty otherwise). */
  extraLines?: Record<string, unknown[]>
  /** The manifest lists output files without their `type`. */
  untypedFiles?: boolean
  /** Lines sent after the deletions of the deleted file (listed even without deletions). */
  extraDeleted?: unknown[]
  /** Each status poll answers after this many ms. */
  pollDelayMs?: number
}

export interface BulkJob {
  id: string
  url: string
  since?: string
  types?: string[]
  typeFilters: string[]
  transactionTime: string
  pollsLeft: number
  /** Each poll's arrival (ms epoch) and the Retry-After (ms) the answer before it asked for. */
  pollTimes: number[]
  askedWaitMs: number[]
  deleted: boolean
  output: Map<string, Resource[]>
  removed: { type: string; id: string }[]
}

const outcome = (diagnostics: string) => ({
  resourceType: 'OperationOutcome',
  issue: [{ severity: 'error', code: 'processing', diagnostics }],
})

/**
 * A loopback FHIR Bulk Data 2.0 server (under `/fhir`): system, Patient and Group `$export`
 * kick-offs with `_type`, `_typeFilter` (recorded) and `_since` (resources and deletions after it),
 * 202 polls with `Retry-After`, a manifest with `output`, `deleted` and `error` files, NDJSON files
 * behind the bearer token, a failing kick-off, a failing or slow poll, a broken download, a file that
 * answers an error status, lines of its own in any file, a bad transactionTime, and a job `DELETE`.
 * `put` and `remove` change the data, each at its own instant (later than any transactionTime given).
 */
export async function startBulkServer() {
  const resources = new Map<string, { resource: Resource; at: number }>()
  const removals: { type: string; id: string; at: number }[] = []
  const jobs: BulkJob[] = []
  const groups: Record<string, string[]> = {}
  let clock = 0
  const tick = () => {
    clock = Math.max(Date.now(), clock + 1)
    return clock
  }
  const state: BulkState = { polls: 0, retryAfter: '1', errorLines: [] }

  const authorised = (headers: Record<string, unknown>, res: ServerResponse) => {
    if (!state.token || headers.authorization === `Bearer ${state.token}`) return true
    json(res, 401, outcome('Authentication required: missing or invalid bearer token'))
    return false
  }

  const server: FixtureServer = await startJsonServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fixture')
    const path = url.pathname
    const openFile = state.openFiles && path.startsWith('/fhir/bulk-files/')
    if (!openFile && !authorised(req.headers, res)) return
    const kick = /^\/fhir\/(?:(Patient)\/|Group\/([^/]+)\/)?\$export$/.exec(path)
    if (kick && req.method === 'GET') {
      if (req.headers.prefer !== 'respond-async') return json(res, 400, outcome('Prefer: respond-async is required'))
      if (state.kickOffOutcome) return json(res, 400, outcome(state.kickOffOutcome))
      const groupId = kick[2]
      if (groupId !== undefined && !groups[groupId]) return json(res, 404, outcome(`Group/${groupId} is not known`))
      const since = url.searchParams.get('_since') ?? undefined
      const sinceMs = since === undefined ? Number.NEGATIVE_INFINITY : Date.parse(since)
      const types = url.searchParams.get('_type')?.split(',')
      const transactionTime = new Date(tick()).toISOString()
      const output = new Map<string, Resource[]>()
      for (const { resource, at } of resources.values()) {
        if (at <= sinceMs || (types && !types.includes(resource.resourceType))) continue
        if (kick[1] === 'Patient' && resource.resourceType !== 'Patient' && !resource.subject) continue
        if (groupId !== undefined) {
          const member =
            resource.resourceType === 'Patient'
              ? `Patient/${resource.id}`
              : (resource.subject as { reference?: string })?.reference
          if (!groups[groupId].includes(member ?? '')) continue
        }
        output.set(resource.resourceType, [...(output.get(resource.resourceType) ?? []), resource])
      }
      const id = `job-${jobs.length + 1}`
      const job: BulkJob = {
        id,
        url: req.url ?? '',
        since,
        types,
        typeFilters: url.searchParams.getAll('_typeFilter'),
        transactionTime,
        pollsLeft: state.polls,
        pollTimes: [],
        askedWaitMs: [],
        deleted: false,
        output,
        removed: removals.filter((r) => r.at > sinceMs && since !== undefined).map(({ type, id }) => ({ type, id })),
      }
      jobs.push(job)
      res.writeHead(202, { 'content-location': `${server.url}/fhir/bulk-status/${id}` })
      return void res.end()
    }
    const status = /^\/fhir\/bulk-status\/([^/]+)$/.exec(path)
    if (status) {
      const job = jobs.find((j) => j.id === status[1])
      if (!job || job.deleted) return json(res, 404, outcome('No such export job'))
      if (req.method === 'DELETE') {
        job.deleted = true
        res.writeHead(202)
        return void res.end()
      }
      job.pollTimes.push(Date.now())
      if (state.pollDelayMs) await new Promise((r) => setTimeout(r, state.pollDelayMs))
      if (state.pollOutcome) return json(res, 500, outcome(state.pollOutcome))
      if (job.pollsLeft > 0) {
        job.pollsLeft--
        const headers: Record<string, string> = { 'x-progress': `${Math.round(100 / (job.pollsLeft + 2))}% done` }
        if (state.retryAfter?.startsWith('date:')) {
          const at = new Date(Date.now() + Number(state.retryAfter.slice(5)))
          headers['retry-after'] = at.toUTCString()
          job.askedWaitMs.push(Math.floor(at.getTime() / 1000) * 1000 - Date.now())
        } else if (state.retryAfter !== undefined) {
          headers['retry-after'] = state.retryAfter
          job.askedWaitMs.push(Number(state.retryAfter) * 1000)
        }
        res.writeHead(202, headers)
        return void res.end()
      }
      const files = (name: string) => `${server.url}/fhir/bulk-files/${job.id}/${name}`
      const outputs = new Set([...job.output.keys(), ...Object.keys(state.extraLines ?? {})])
      return json(res, 200, {
        transactionTime: state.transactionTime ?? job.transactionTime,
        request: `${server.url}${job.url}`,
        requiresAccessToken: state.token !== undefined && !state.openFiles,
        output: [...outputs].map((type) => ({
          ...(state.untypedFiles ? {} : { type }),
          url: files(`${type}.ndjson`),
          count: (job.output.get(type)?.length ?? 0) + (state.extraLines?.[type]?.length ?? 0),
        })),
        deleted: job.removed.length > 0 || state.extraDeleted?.length ? [{ type: 'Bundle', url: files('deleted.ndjson') }] : [],
        error: state.errorLines.length > 0 ? [{ type: 'OperationOutcome', url: files('errors.ndjson') }] : [],
      })
    }
    const file = /^\/fhir\/bulk-files\/([^/]+)\/([A-Za-z]+)\.ndjson$/.exec(path)
    if (file) {
      const job = jobs.find((j) => j.id === file[1])
      if (!job) return json(res, 404, outcome('No such file'))
      let lines: unknown[]
      if (file[2] === 'errors') lines = state.errorLines.map(outcome)
      else if (file[2] === 'deleted') {
        lines = job.removed.map((r) => ({
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [{ request: { method: 'DELETE', url: `${r.type}/${r.id}` } }],
        }))
        lines.push(...(state.extraDeleted ?? []))
      } else {
        if (state.fileStatus !== undefined) return json(res, state.fileStatus, outcome(`Cannot read ${file[2]}.ndjson`))
        lines = [...(job.output.get(file[2]) ?? []), ...(state.extraLines?.[file[2]] ?? [])]
      }
      res.writeHead(200, { 'content-type': 'application/fhir+ndjson' })
      // A slow file answers its headers at once: only its lines are late.
      if (state.lineDelayMs) res.flushHeaders()
      let sent = 0
      for (const line of lines) {
        if (state.breakAfterLines !== undefined && sent >= state.breakAfterLines && file[2] !== 'errors') {
          res.destroy()
          return
        }
        if (state.lineDelayMs && sent % (state.lineDelayEvery ?? 1) === 0) {
          await new Promise((r) => setTimeout(r, state.lineDelayMs))
        }
        res.write(`${JSON.stringify(line)}\n`)
        sent++
      }
      return void res.end()
    }
    return json(res, 404, outcome(`Unknown path ${path}`))
  })

  return {
    server,
    baseUrl: `${server.url}/fhir`,
    state,
    jobs,
    groups,
    /** Adds or replaces a resource, changed now. */
    put(resource: Resource) {
      resources.set(`${resource.resourceType}/${resource.id}`, { resource, at: tick() })
    },
    /** Deletes a resource now (listed in the deleted file of exports since before now). */
    remove(type: string, id: string) {
      resources.delete(`${type}/${id}`)
      removals.push({ type, id, at: tick() })
    },
    reset() {
      resources.clear()
      removals.length = 0
      Object.assign(state, {
        token: undefined,
        openFiles: undefined,
        polls: 0,
        retryAfter: '1',
        kickOffOutcome: undefined,
        pollOutcome: undefined,
        errorLines: [],
        breakAfterLines: undefined,
        lineDelayMs: undefined,
        lineDelayEvery: undefined,
        fileStatus: undefined,
        transactionTime: undefined,
        extraLines: undefined,
        untypedFiles: undefined,
        extraDeleted: undefined,
        pollDelayMs: undefined,
      })
    },
    close: () => server.close(),
  }
}

export type BulkServer = Awaited<ReturnType<typeof startBulkServer>>

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/fhir+json' })
  res.end(JSON.stringify(body))
}
