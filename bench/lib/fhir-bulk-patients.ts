import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { patient } from './fhir-patients.ts'

/**
 * A loopback FHIR Bulk Data server of `total` synthetic Patients (the generator of
 * fhir-patients.ts, so the same resources a search of startFhirPatientServer answers): a system
 * `$export` kick-off (202 with the status URL), one 202 poll, then the manifest with the output in
 * files of `perFile` Patients, each NDJSON file generated line by line as it is sent (written as the
 * connection drains, never held whole), and the job's DELETE.
 */
export async function startBulkPatientServer(total: number, perFile = 100_000) {
  let polls = 0
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const path = url.pathname
    if (path === '/$export' && req.method === 'GET') {
      res.writeHead(202, { 'content-location': `${base}/status/1` })
      return res.end()
    }
    if (path === '/status/1' && req.method === 'DELETE') {
      res.writeHead(202)
      return res.end()
    }
    if (path === '/status/1') {
      if (polls++ % 2 === 0) {
        res.writeHead(202, { 'retry-after': '1', 'x-progress': 'preparing' })
        return res.end()
      }
      const files = Math.ceil(total / perFile)
      const output = Array.from({ length: files }, (_, f) => ({
        type: 'Patient',
        url: `${base}/files/${f}.ndjson`,
        count: Math.min(perFile, total - f * perFile),
      }))
      return json(res, 200, {
        transactionTime: new Date().toISOString(),
        request: `${base}/$export`,
        requiresAccessToken: false,
        output,
        error: [],
      })
    }
    const file = /^\/files\/(\d+)\.ndjson$/.exec(path)
    if (file) {
      const from = Number(file[1]) * perFile
      const to = Math.min(total, from + perFile)
      res.writeHead(200, { 'content-type': 'application/fhir+ndjson' })
      return void streamLines(res, from, to)
    }
    json(res, 404, { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'not-found' }] })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: base,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** Patients `from` … `to - 1` as NDJSON, in chunks of a few hundred lines, waiting for the socket to drain. */
async function streamLines(res: ServerResponse, from: number, to: number) {
  let chunk = ''
  for (let i = from; i < to; i++) {
    chunk += `${JSON.stringify(patient(i))}\n`
    if ((i - from) % 256 === 255 || i === to - 1) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve))
      chunk = ''
      if (res.destroyed) return
    }
  }
  res.end()
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/fhir+json' })
  res.end(JSON.stringify(body))
}
