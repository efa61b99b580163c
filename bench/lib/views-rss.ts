import { spawn } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { mib, type RssPhase } from './rss.ts'

/** What bench/views-rss-case.ts prints: bytes and seconds. */
export interface ViewsRssResult {
  rows: number
  /** Data lines of the CSV export of every row (the header not counted). */
  exportedRows: number
  /** The case process's high-water mark of `rss` (`process.resourceUsage().maxRSS`), in bytes. */
  maxRss: number
  phases: RssPhase[]
}

const root = new URL('../..', import.meta.url).pathname
const NAME = 'views-rss-case'

/**
 * Bundles bench/views-rss-case.ts into `outdir` (`dist/bench` unless told), as the service runs from
 * `dist/`: no TypeScript loader in the measured process (tsx alone holds ~60 MiB), and what the code
 * loads by dynamic import() on first use in chunks of its own, as scripts/build.ts splits it.
 * Answers the entry's path.
 */
export async function bundleViewsRssCase(outdir = join(root, 'dist/bench')): Promise<string> {
  // Chunk names carry a content hash: clear the previous build's, or they pile up.
  if (existsSync(outdir)) for (const f of readdirSync(outdir)) if (f.startsWith(`${NAME}.`)) rmSync(join(outdir, f))
  await build({
    entryPoints: [join(root, `bench/${NAME}.ts`)],
    outdir,
    splitting: true,
    chunkNames: `${NAME}.[name]-[hash]`,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['@libsql/client', 'exceljs', 'pdfkit', 'postgres'],
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  })
  return join(outdir, `${NAME}.mjs`)
}

/**
 * Runs the bundled case (`bundle`) in a process of its own over `rows` Patients in
 * `dir`/patients.ndjson, with its database in `dir`; answers what it printed. The case's
 * progress and errors go to this process's stderr.
 */
export function runViewsRssCase(bundle: string, dir: string, rows: number): Promise<ViewsRssResult> {
  return new Promise((resolve, reject) => {
    // BENCH_RSS_LIVE_HEAP=1: the case collects garbage after each phase (a diagnosis, not the figures).
    const gc = process.env.BENCH_RSS_LIVE_HEAP === '1' ? ['--expose-gc'] : []
    const child = spawn(process.execPath, [...gc, bundle, dir, String(rows)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    child.on('error', reject)
    child.on('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? ''
      try {
        // The libSQL native module sometimes panics while the process exits, after the result was
        // printed: a result line is the case's measurement whatever the exit code.
        const result = JSON.parse(last) as ViewsRssResult
        if (!Array.isArray(result.phases)) throw new Error('no phases')
        resolve(result)
      } catch {
        reject(new Error(`the service process case failed (exit ${code}) without a result: ${out}`))
      }
    })
  })
}

/** The goal of issue 22 item 4, read strictly: 300 MB is 300,000,000 bytes (286 MiB). */
export const RSS_GOAL_BYTES = 300_000_000

export const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`

/** The case's memory and time per phase, as a Markdown table. */
export function serviceRssTable(result: ViewsRssResult): string {
  const live = result.phases.some((p) => p.liveHeapAfter !== undefined)
  const lines = [
    `| phase | seconds | rss peak | high-water mark after | V8 heap used peak | external peak | at the rss peak: V8 heap reserved, external, rest (native) | event loop held at most |${live ? ' live heap after |' : ''}`,
    `|---|---|---|---|---|---|---|---|${live ? '---|' : ''}`,
  ]
  for (const p of result.phases) {
    const rest = p.peak - p.atPeak.heapTotal - p.atPeak.external
    lines.push(
      `| ${p.name} | ${p.seconds.toFixed(1)} | ${mib(p.peak)} | ${mib(p.maxRssAfter)} | ${mib(p.heapPeak)} | ${mib(p.externalPeak)} | ${mib(p.atPeak.heapTotal)}, ${mib(p.atPeak.external)}, ${mib(rest)} | ${(p.longestGap / 1000).toFixed(1)} s |${live ? ` ${mib(p.liveHeapAfter ?? 0)} |` : ''}`,
    )
  }
  return lines.join('\n')
}

/** The phase whose end first showed the process's high-water mark: the phase that set it. */
export const peakPhase = (result: ViewsRssResult) =>
  result.phases.find((p) => p.maxRssAfter >= result.maxRss) ?? result.phases[result.phases.length - 1]
