/**
 * `npx tsx bench/upload.ts`: peak memory of the Node server while it takes a 100 MB CSV upload
 * (`PUT /api/datasources/{id}/file`). The server runs as its own process (`node --import tsx
 * src/runtime/node.ts`, FILES_DIR and a libSQL file in a temporary folder); this process generates
 * the CSV as it sends it (a chunked body, never held whole). The server's peak RSS is read from
 * /proc/<pid>/status (VmHWM, Linux) after start-up and after each answer. The source reads at
 * most 10 rows (maxRows), so the figure is the upload's, not the sync's. Cases:
 *   - raw: the CSV as the request body, streamed into the file store;
 *   - multipart: the same bytes as multipart/form-data, which the runtime's FormData parser holds
 *     (the documented exception), for contrast.
 * BENCH_UPLOAD_BYTES (100000000) sets the size; BENCH_CASES=raw runs one case.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { signToken } from '../src/lib/tokens.ts'
import { freePort, killAllNow, startServer, stop } from './lib/processes.ts'

const BYTES = Number(process.env.BENCH_UPLOAD_BYTES ?? 100_000_000)
const CASES = (process.env.BENCH_CASES ?? 'raw,multipart').split(',')
const SECRET = 'bench-secret-0123456789-0123456789-abcdef'
const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** VmHWM (peak resident set) and VmRSS of a process, in MiB. */
function memoryOf(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { peak: kib('VmHWM') / 1024, rss: kib('VmRSS') / 1024 }
}

/** `BYTES` of CSV (id,name,age,city,score), made 64 KiB at a time as the body is read. */
function csvStream(prefix = '', suffix = ''): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let sent = 0
  let row = 0
  let started = false
  let ended = false
  const total = BYTES
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!started) {
        started = true
        controller.enqueue(encoder.encode(`${prefix}id,name,age,city,score\n`))
        sent += 'id,name,age,city,score\n'.length
        return
      }
      if (sent >= total) {
        if (!ended) {
          ended = true
          if (suffix) controller.enqueue(encoder.encode(suffix))
        }
        controller.close()
        return
      }
      let chunk = ''
      while (chunk.length < 64 * 1024 && sent + chunk.length < total) {
        chunk += `${row},Name ${row},${row % 90},City ${row % 50},${(row * 7) % 1000}\n`
        row++
      }
      sent += chunk.length
      controller.enqueue(encoder.encode(chunk))
    },
  })
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-upload-'))
  process.on('exit', killAllNow)
  try {
    for (const name of CASES) await run(dir, name)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function run(dir: string, name: string) {
  const port = await freePort()
  const data = join(dir, name)
  const env = {
    NODE_ENV: 'production',
    PORT: String(port),
    DATABASE_URL: `file:${join(data, 'panels.db')}`,
    FILES_DIR: join(data, 'files'),
    JWT_SECRET: SECRET,
    ENCRYPTION_KEY: 'bench-encryption-key',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_ENABLED: 'false',
  }
  const server = await startServer(
    name,
    ['--import', 'tsx', join(ROOT, 'src/runtime/node.ts')],
    env,
    join(dir, `${name}.log`),
    port,
    '/health',
  )
  try {
    const pid = server.child.pid!
    const token = await signToken(SECRET, { tenantId: 'bench', userId: 'alice' })
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const who = { tenantId: 'bench', userId: 'alice' }
    const post = async (path: string, body: object) =>
      (await fetch(`${server.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ ...who, ...body }) })).json()
    const panel = await post('/api/panels', { name: 'Upload' })
    const source = await post(`/api/panels/${panel.id}/datasources`, {
      name: 'Big CSV',
      type: 'csv',
      config: { filePath: 'none.csv', maxRows: 10 },
    })
    const before = memoryOf(pid)
    const boundary = '----bench-upload-boundary'
    const body =
      name === 'raw'
        ? csvStream()
        : csvStream(
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n`,
            `\r\n--${boundary}--\r\n`,
          )
    const started = performance.now()
    const res = await fetch(`${server.url}/api/datasources/${source.id}/file?tenantId=bench&userId=alice&filename=big.csv`, {
      method: 'PUT',
      headers: {
        authorization: headers.authorization,
        'content-type': name === 'raw' ? 'text/csv' : `multipart/form-data; boundary=${boundary}`,
      },
      body,
      duplex: 'half',
    } as RequestInit)
    const answer = await res.json()
    const seconds = (performance.now() - started) / 1000
    const after = memoryOf(pid)
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(answer)}`)
    const stored = statSync(join(env.FILES_DIR, answer.config.filePath)).size
    console.log(
      `${name.padEnd(9)} ${(stored / 1e6).toFixed(1)} MB stored in ${seconds.toFixed(1)} s; server peak RSS ` +
        `${before.peak.toFixed(0)} MiB before, ${after.peak.toFixed(0)} MiB after (+${(after.peak - before.peak).toFixed(0)} MiB); ` +
        `sync: ${answer.syncStatus}, ${answer.recordsProcessed} rows (maxRows 10)`,
    )
    if (stored < BYTES) throw new Error(`${name}: stored ${stored} bytes of ${BYTES}`)
  } finally {
    await stop(server.child)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
