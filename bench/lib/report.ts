import type { LoadResult } from './load.ts'

export interface CaseTarget {
  /** Minimum ratio of the case's req/s to the bare route's, measured in the same run. */
  minRatio: number
  /** Maximum p99 latency in ms, when the issue sets one. */
  maxP99?: number
}

export interface CaseReport {
  name: string
  bare: LoadResult
  real: LoadResult
  ratio: number
  target?: CaseTarget
  pass: boolean
}

export function judge(name: string, bare: LoadResult, real: LoadResult, target?: CaseTarget): CaseReport {
  const ratio = real.rps / bare.rps
  const pass =
    real.failures === 0 &&
    bare.failures === 0 &&
    (!target || (ratio >= target.minRatio && (target.maxP99 === undefined || real.p99 <= target.maxP99)))
  return { name, bare, real, ratio, target, pass }
}

const ms = (v: number) => v.toFixed(3)
const pad = (s: string, n: number, right = false) => (right ? s.padStart(n) : s.padEnd(n))

/** The table the issue asks for: case, req/s, p50, p99, ratio to bare, target, pass/fail. */
export function table(reports: CaseReport[]): string {
  const head = ['case', 'req/s', 'p50 ms', 'p99 ms', 'ratio', 'target', 'result']
  const rows: string[][] = []
  for (const r of reports) {
    rows.push([
      `  bare Hono (before ${r.name.split(' ')[0]} ${r.name.split(' ')[1]})`,
      r.bare.rps.toFixed(0),
      ms(r.bare.p50),
      ms(r.bare.p99),
      '1.000',
      '',
      '',
    ])
    const target = r.target
      ? `≥ ${(r.target.minRatio * 100).toFixed(0)} %${r.target.maxP99 ? `, p99 ≤ ${r.target.maxP99} ms` : ''}`
      : ''
    const failures = r.real.failures ? ` (${r.real.failures} failed requests)` : ''
    rows.push([
      r.name,
      r.real.rps.toFixed(0),
      ms(r.real.p50),
      ms(r.real.p99),
      r.ratio.toFixed(3),
      target,
      (r.pass ? 'pass' : 'FAIL') + failures,
    ])
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)))
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i], i >= 1 && i <= 4)).join('  ')
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}
