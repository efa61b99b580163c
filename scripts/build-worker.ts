/**
 * `npm run build:worker`: bundles the Workers entry exactly as `wrangler deploy` would (wrangler's
 * own bundler, `--dry-run`, minified as wrangler.toml asks), into `dist/worker/`, and reports
 * the bundle size raw and gzipped against the Workers limits (gzip: 3 MiB on the free plan,
 * 10 MiB on paid plans). Over the free limit it fails, naming the paid one.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const MIB = 1024 * 1024
export const WORKER_LIMITS = { freeGzip: 3 * MIB, paidGzip: 10 * MIB }

export interface WorkerBundle {
  /** The bundle's main module (`workers.js`) in `outdir`. */
  script: string
  outdir: string
  rawBytes: number
  gzipBytes: number
}

/** Bundles src/runtime/workers.ts with wrangler into `outdir` (default dist/worker). */
export function buildWorker(outdir = join(ROOT, 'dist', 'worker')): WorkerBundle {
  rmSync(outdir, { recursive: true, force: true })
  // wrangler keeps temporary bundles in .wrangler/; removed again unless it was there before.
  const stateDir = join(ROOT, '.wrangler')
  const hadState = existsSync(stateDir)
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir],
      { cwd: ROOT, stdio: 'pipe', timeout: 180_000, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' } },
    )
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer }
    throw new Error(`wrangler deploy --dry-run failed:\n${stderr?.toString() ?? ''}${stdout?.toString() ?? ''}`)
  } finally {
    if (!hadState) rmSync(stateDir, { recursive: true, force: true })
  }
  const modules = readdirSync(outdir).filter((f) => /\.(m?js|wasm)$/.test(f))
  const script = join(outdir, modules.find((f) => f.startsWith('workers.')) ?? modules[0])
  let rawBytes = 0
  let gzipBytes = 0
  for (const file of modules) {
    const bytes = readFileSync(join(outdir, file))
    rawBytes += bytes.length
    gzipBytes += gzipSync(bytes).length
  }
  return { script, outdir, rawBytes, gzipBytes }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const bundle = buildWorker()
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`
  const share = (n: number) => `${((bundle.gzipBytes / n) * 100).toFixed(0)}%`
  console.log(`built ${bundle.script}`)
  console.log(`size: ${kib(bundle.rawBytes)} raw, ${kib(bundle.gzipBytes)} gzip`)
  console.log(
    `Workers limits (gzip): free 3 MiB (${share(WORKER_LIMITS.freeGzip)} used), paid 10 MiB (${share(WORKER_LIMITS.paidGzip)} used)`,
  )
  if (bundle.gzipBytes > WORKER_LIMITS.freeGzip) {
    console.error(
      `the bundle is over the free plan's 3 MiB${bundle.gzipBytes > WORKER_LIMITS.paidGzip ? ' and the paid plan' : ''} limit`,
    )
    process.exit(1)
  }
}
