import { bundleCase, runCaseProcess } from './case-process.ts'
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

/** Bundles bench/views-rss-case.ts into `outdir` (`dist/bench` unless told); answers the entry's path. */
export const bundleViewsRssCase = (outdir?: string): Promise<string> => bundleCase('views-rss-case', outdir)

/**
 * Runs the bundled case (`bundle`) in a process of its own over `rows` Patients in
 * `dir`/patients.ndjson, with its database in `dir`; answers what it printed.
 */
export async function runViewsRssCase(bundle: string, dir: string, rows: number): Promise<ViewsRssResult> {
  // BENCH_RSS_LIVE_HEAP=1: the case collects garbage after each phase (a diagnosis, not the figures).
  const nodeArgs = process.env.BENCH_RSS_LIVE_HEAP === '1' ? ['--expose-gc'] : []
  const result = await runCaseProcess<ViewsRssResult>(bundle, [dir, String(rows)], { name: 'the service process', nodeArgs })
  if (!Array.isArray(result.phases)) throw new Error(`the service process case printed no phases: ${JSON.stringify(result)}`)
  return result
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
