/**
 * `npm run build:worker`: copies Swagger UI's files into the static-assets folder of wrangler.toml
 * (`[assets] directory`), bundles the Workers entry exactly as `wrangler deploy` would (wrangler's
 * own bundler, `--dry-run`, minified, with wrangler.toml's `[alias]`), into `dist/worker/`, and
 * reports the bundle size raw and gzipped, and what is largest in it (from esbuild's metafile),
 * against the project's budget (1 MiB gzip, issue 11) and the Workers limits (gzip: 3 MiB on the
 * free plan, 10 MiB on paid plans). Over the budget it fails. `npm run docs:sizes` writes the
 * figures into docs/runtimes.md.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { copySwaggerUi } from './build.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const MIB = 1024 * 1024
export const WORKER_LIMITS = { budgetGzip: 1 * MIB, freeGzip: 3 * MIB, paidGzip: 10 * MIB }

/** The static-assets folder wrangler.toml names (`[assets] directory`), absolute. */
export function workerAssetsDir(): string {
  const toml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8')
  const assets = /^\[assets\][^[]*?^directory\s*=\s*"([^"]+)"/ms.exec(toml)?.[1]
  if (!assets) throw new Error('wrangler.toml has no [assets] directory')
  return resolve(ROOT, assets)
}

export interface WorkerBundle {
  /** The bundle's main module (`workers.js`) in `outdir`. */
  script: string
  outdir: string
  /** The static assets (Swagger UI's files), uploaded beside the script, not part of its size. */
  assetsDir: string
  rawBytes: number
  gzipBytes: number
  /** Bytes each package (or src/ folder) adds to the minified bundle, largest first. */
  parts: { name: string; bytes: number }[]
}

/** What the bundle is made of, per package (node_modules) or per src/ folder, from esbuild's metafile. */
function bundleParts(metafile: string): WorkerBundle['parts'] {
  const meta = JSON.parse(readFileSync(metafile, 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>
  }
  const sizes = new Map<string, number>()
  for (const output of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1]
      const name = pkg ?? (/(?:^|\/)(src\/[^/]+)/.exec(input)?.[1] || input)
      sizes.set(name, (sizes.get(name) ?? 0) + bytesInOutput)
    }
  }
  return [...sizes].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes)
}

/** Bundles src/runtime/workers.ts with wrangler into `outdir` (default dist/worker). */
export function buildWorker(outdir = join(ROOT, 'dist', 'worker')): WorkerBundle {
  rmSync(outdir, { recursive: true, force: true })
  const assetsDir = workerAssetsDir()
  copySwaggerUi(assetsDir)
  const metafile = join(outdir, 'bundle-meta.json')
  // wrangler keeps temporary bundles in .wrangler/; removed again unless it was there before.
  const stateDir = join(ROOT, '.wrangler')
  const hadState = existsSync(stateDir)
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir, '--metafile', metafile],
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
  return { script, outdir, assetsDir, rawBytes, gzipBytes, parts: bundleParts(metafile) }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const bundle = buildWorker()
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`
  const share = (n: number) => `${((bundle.gzipBytes / n) * 100).toFixed(0)}%`
  console.log(`built ${bundle.script} (static assets: ${bundle.assetsDir})`)
  console.log(`size: ${kib(bundle.rawBytes)} raw, ${kib(bundle.gzipBytes)} gzip`)
  console.log(
    `largest parts (minified, before gzip): ${bundle.parts
      .slice(0, 8)
      .map((p) => `${p.name} ${kib(p.bytes)}`)
      .join(', ')}`,
  )
  console.log(
    `budget 1 MiB gzip (${share(WORKER_LIMITS.budgetGzip)} used); Workers limits (gzip): free 3 MiB (${share(WORKER_LIMITS.freeGzip)}), paid 10 MiB (${share(WORKER_LIMITS.paidGzip)})`,
  )
  if (bundle.gzipBytes > WORKER_LIMITS.budgetGzip) {
    console.error('the bundle is over the project\'s 1 MiB gzip budget (issue 11): see docs/runtimes.md, "Size"')
    process.exit(1)
  }
}
