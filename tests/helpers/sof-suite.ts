import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestClient } from './http.ts'

/**
 * The official SQL-on-FHIR v2 test suite (MIT), vendored unchanged in the checkout under
 * `tests/fixtures/sql-on-fhir-v2/` (its README names the upstream commit), and run through
 * `POST /api/$viewdefinition-run`. Used by the conformance tests (npm test, and the API suite on
 * Workers and Deno) and by `npm run conformance:sof`, which writes the official report.
 */

export interface SuiteTest {
  title: string
  view: Record<string, unknown>
  expect?: Record<string, unknown>[]
  expectCount?: number
  expectError?: boolean
  expectColumns?: string[]
}

export interface Suite {
  file: string
  resources: Record<string, unknown>[]
  tests: SuiteTest[]
}

export interface TestOutcome {
  passed: boolean
  error?: string
}

/** The suite's test files, found from this file's place in the checkout (never outside it). */
export const SUITE_DIR = fileURLToPath(new URL('../fixtures/sql-on-fhir-v2/tests/', import.meta.url))

/** The number of tests in the vendored suite (22 files). */
export const SUITE_TEST_COUNT = 134

export function loadSuites(dir: string = SUITE_DIR): Suite[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, ...JSON.parse(readFileSync(join(dir, file), 'utf8')) }))
}

/**
 * Runs one official test through the HTTP operation and judges the answer as the suite says: over
 * the suite's resources sent inline, or over a data source holding them (`sourceId`).
 */
export async function runSuiteTest(client: TestClient, suite: Suite, test: SuiteTest, sourceId?: number): Promise<TestOutcome> {
  const parameter = [
    { name: 'viewResource', resource: test.view },
    ...(sourceId === undefined
      ? suite.resources.map((resource) => ({ name: 'resource', resource }))
      : [{ name: 'source', valueString: String(sourceId) }]),
  ]
  const res = await client.post('/api/$viewdefinition-run', { resourceType: 'Parameters', parameter })
  if (test.expectError) {
    if (res.status === 400 && res.body?.code === 'INVALID_VIEW_DEFINITION') return { passed: true }
    return {
      passed: false,
      error: `expected a 400 INVALID_VIEW_DEFINITION, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
    }
  }
  if (res.status !== 200 || !Array.isArray(res.body)) {
    return { passed: false, error: `expected 200 with rows, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}` }
  }
  const rows = res.body as Record<string, unknown>[]
  if (test.expectCount !== undefined && rows.length !== test.expectCount) {
    return { passed: false, error: `expected ${test.expectCount} rows, got ${rows.length}` }
  }
  if (test.expectColumns) {
    const wrong = rows.find((r) => Object.keys(r).join(',') !== test.expectColumns!.join(','))
    if (wrong)
      return { passed: false, error: `expected columns ${test.expectColumns.join(', ')}, got ${Object.keys(wrong).join(', ')}` }
  }
  if (test.expect) {
    // An unordered multiset of rows: each row compared whole, by value.
    const got = rows.map(canonical).sort()
    const want = test.expect.map(canonical).sort()
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      return { passed: false, error: `expected rows ${JSON.stringify(test.expect)}, got ${JSON.stringify(rows)}`.slice(0, 2000) }
    }
  }
  return { passed: true }
}

/** A value's JSON with object keys sorted, so rows compare by content. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  )
}
