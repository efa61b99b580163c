/**
 * `npm run conformance:sof`: runs the official SQL-on-FHIR v2 tests through
 * `POST /api/$viewdefinition-run` of the real app (in process, in-memory database) and writes
 * `conformance/sof-test-report.json` in the suite's report format (test-report.schema.json), then
 * prints `N passed, N failed`. Exits 1 when a test fails. The tests are the ones vendored under
 * `tests/fixtures/sql-on-fhir-v2/` (its README names the upstream commit).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeTestApp } from '../tests/helpers/app.ts'
import { clientFor } from '../tests/helpers/http.ts'
import { loadSuites, runSuiteTest, type TestOutcome } from '../tests/helpers/sof-suite.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

async function main() {
  const { app, client: db } = await makeTestApp()
  const client = clientFor(app, 'conformance', 'conformance')
  const report: Record<string, { tests: { name: string; result: TestOutcome }[] }> = {}
  let passed = 0
  let failed = 0
  for (const suite of loadSuites()) {
    const tests = []
    for (const test of suite.tests) {
      const result = await runSuiteTest(client, suite, test)
      if (result.passed) passed++
      else {
        failed++
        console.log(`FAIL ${suite.file}: ${test.title}: ${result.error}`)
      }
      tests.push({ name: test.title, result })
    }
    report[suite.file] = { tests }
  }
  db.close()
  const out = join(root, 'conformance', 'sof-test-report.json')
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
  console.log(`${passed} passed, ${failed} failed`)
  console.log(`report: ${out}`)
  process.exit(failed > 0 ? 1 : 0)
}

await main()
