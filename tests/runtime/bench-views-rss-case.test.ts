import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writePatientsFile } from '../../bench/lib/patients-file.ts'
import { countLines } from '../../bench/lib/views-panel.ts'
import { bundleViewsRssCase, runViewsRssCase, type ViewsRssResult } from '../../bench/lib/views-rss.ts'

const ROWS = 1000
const root = new URL('../..', import.meta.url).pathname

describe('the service-process case of bench:views (bench/views-rss-case.ts)', () => {
  // The bundle sits in the checkout (its packages resolve from node_modules), in a folder of this run's own.
  const outdir = join(root, 'dist', `bench-test-${process.pid}`)
  const dir = mkdtempSync(join(tmpdir(), 'views-rss-case-'))
  let result: ViewsRssResult

  beforeAll(async () => {
    await writePatientsFile(join(dir, 'patients.ndjson'), ROWS)
    result = await runViewsRssCase(await bundleViewsRssCase(outdir), dir, ROWS)
  }, 60_000)

  afterAll(() => {
    rmSync(outdir, { recursive: true, force: true })
    rmSync(dir, { recursive: true, force: true })
  })

  it('runs every phase of the service over the file, exporting every row', () => {
    expect(result.rows).toBe(ROWS)
    expect(result.exportedRows).toBe(ROWS)
    expect(result.phases.map((p) => p.name)).toEqual([
      'modules loaded',
      'service start (database opened and migrated, deps, app)',
      'panel and its 10 columns created',
      'initial sync, cells materialised',
      'view created: 2 filters, 2 sort keys',
      'view created: grouped by City, 3 aggregations',
      'view pages (20 reads of pages 1–5)',
      'grouped view, summary computed (5 reads, the cache emptied before each)',
      'view created: everyone, unsorted',
      'view created: everyone, 2 sort keys',
      "CSV export of every row in the sorted view's order, streamed",
      'small write (a webhook source, a delivery updating 3 rows), then a page',
      'recompute of one calculated column (Senior), until materialised',
    ])
  })

  it("reports the process's peak RSS, and per phase peaks no higher than it", () => {
    expect(result.maxRss).toBeGreaterThan(20 * 2 ** 20)
    let mark = 0
    for (const p of result.phases) {
      expect(p.seconds).toBeGreaterThanOrEqual(0)
      expect(p.peak).toBeLessThanOrEqual(p.maxRssAfter)
      expect(p.maxRssAfter).toBeGreaterThanOrEqual(mark)
      mark = p.maxRssAfter
      expect(p.heapPeak).toBeGreaterThan(0)
      expect(p.heapPeak).toBeLessThan(p.peak)
      expect(p.externalPeak).toBeGreaterThan(0)
      expect(p.atPeak.heapTotal + p.atPeak.external).toBeLessThan(p.peak)
    }
    expect(mark).toBeLessThanOrEqual(result.maxRss)
  })
})

describe('countLines', () => {
  const body = (...chunks: string[]) =>
    new Response(
      new ReadableStream({
        start(c) {
          for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk))
          c.close()
        },
      }),
    )

  it('counts the lines of a streamed body, the last one with or without its newline', async () => {
    expect(await countLines(body('a,b\n1,', '2\n3,4\n'))).toBe(3)
    expect(await countLines(body('a,b\n1,2\n', '3,4'))).toBe(3)
    expect(await countLines(body())).toBe(0)
    expect(await countLines(new Response(null))).toBe(0)
  })
})
