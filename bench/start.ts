/**
 * `npm run bench:start` (issue 11, point 6): cold start of the bundled Node server, from exec to the
 * first `GET /health` 200, on a database migrated beforehand, beside the same measure for a bare Hono
 * server on @hono/node-server (bench/bare-server.ts, bundled the same way, so neither pays for a
 * TypeScript loader). Both run with plain `node` on 127.0.0.1; the rounds alternate which one starts
 * first, and the medians are compared. Polls every 2 ms with a fresh connection.
 *
 * Options (env): BENCH_ROUNDS (9), BENCH_NO_BUILD=1 (use dist/ as it is), BENCH_NO_DOCS=1 (print
 * only; by default the result replaces the generated block in docs/performance.md).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { writeBlock } from '../scripts/doc-block.ts'
import { freePort } from './lib/processes.ts'

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 9))
const TARGET_MS = 1000
const root = new URL('..', import.meta.url).pathname

interface Target {
  name: string
  script: string
  path: string
  env: Record<string, string>
}

/** One status code from 127.0.0.1:port, or 0 when nothing answers yet. */
function status(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', () => resolve(0))
    req.end()
  })
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()))
}

/** Milliseconds from spawning `node <script>` to the first 200 on `path`; the process is stopped after. */
async function coldStart(target: Target): Promise<number> {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, [target.script], {
    env: { PATH: process.env.PATH ?? '', ...target.env, PORT: String(port) },
    stdio: 'ignore',
  })
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${target.name} exited with code ${child.exitCode}`)
      if ((await status(port, target.path)) === 200) return performance.now() - started
      if (performance.now() - started > 30_000) throw new Error(`${target.name} did not answer within 30 s`)
      await new Promise((r) => setTimeout(r, 2))
    }
  } finally {
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited(child)
    clearTimeout(timer)
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

async function main() {
  if (process.env.BENCH_NO_BUILD !== '1') {
    const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' })
    if (built.status !== 0) throw new Error('npm run build failed')
  }
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-start-'))
  try {
    const bare = join(dir, 'bare-server.mjs')
    await build({
      entryPoints: [join(root, 'bench/bare-server.ts')],
      outfile: bare,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'warning',
    })
    const service: Target = {
      name: 'bundled server',
      script: join(root, 'dist/runtime/node.js'),
      path: '/health',
      // What the container runs: production rules, a libSQL file, the memory cache, the scheduler on.
      env: {
        NODE_ENV: 'production',
        DATABASE_URL: `file:${join(dir, 'data/panels.db')}`,
        FILES_DIR: join(dir, 'data/files'),
        JWT_SECRET: 'bench-secret-0123456789-0123456789-abcdef',
        ENCRYPTION_KEY: 'bench-encryption-key',
      },
    }
    const baseline: Target = { name: 'bare Hono', script: bare, path: '/', env: {} }

    // The first start creates and migrates the database; the measured starts find it migrated.
    const first = await coldStart(service)
    console.log(`first start (creates and migrates the database): ${first.toFixed(0)} ms`)
    const times: Record<string, number[]> = { [service.name]: [], [baseline.name]: [] }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [service, baseline] : [baseline, service]
      for (const target of order) times[target.name].push(await coldStart(target))
      console.log(
        `round ${round + 1}: bare ${times[baseline.name].at(-1)!.toFixed(0)} ms, service ${times[service.name].at(-1)!.toFixed(0)} ms`,
      )
    }
    const med = { bare: median(times[baseline.name]), service: median(times[service.name]) }
    const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`
    const pass = med.service < TARGET_MS
    const lines = [
      `\`npm run bench:start\`, ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${ROUNDS} rounds alternating which starts first (median and range of each):`,
      '',
      '| exec → first 200 | median ms | range ms | ratio to bare | target | result |',
      '|---|---|---|---|---|---|',
      `| bare Hono on @hono/node-server, \`GET /\` | ${med.bare.toFixed(0)} | ${range(times[baseline.name])} | 1 | | |`,
      `| bundled server (\`node dist/runtime/node.js\`), \`GET /health\`, migrated database | ${med.service.toFixed(0)} | ${range(times[service.name])} | **${(med.service / med.bare).toFixed(2)}** | < ${TARGET_MS} ms | ${pass ? 'pass' : 'FAIL'} |`,
      '',
      `First start, which creates and migrates the database: ${first.toFixed(0)} ms.`,
    ]
    console.log(`\n${lines.join('\n')}`)
    if (process.env.BENCH_NO_DOCS !== '1') {
      writeBlock(join(root, 'docs/performance.md'), 'bench-start', lines.join('\n'))
      console.log('\ndocs/performance.md updated (BENCH_NO_DOCS=1 prints only)')
    }
    if (!pass) process.exitCode = 1
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
