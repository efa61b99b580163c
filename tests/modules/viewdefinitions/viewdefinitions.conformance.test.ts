import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { findSuiteDir, loadSuites, runSuiteTest } from '../../helpers/sof-suite.ts'

/**
 * The 134 official SQL-on-FHIR v2 tests, every one through `POST /api/$viewdefinition-run` of one
 * app (tests/helpers/sof-suite.ts reads them from shared/ beside the checkout).
 */

const dir = findSuiteDir()
const suites = dir ? loadSuites(dir) : []

let client: TestClient

beforeAll(async () => {
  const { app } = await makeTestApp()
  client = clientFor(app, 'tenant-sof', 'user-sof')
})

// shared/ is beside every checkout (a developer's and CI's): without it the first test fails, naming it.
describe('SQL-on-FHIR v2 official tests through $viewdefinition-run', () => {
  it('finds all 134 tests in shared/conformance/sql-on-fhir-v2 beside the checkout', () => {
    expect(dir, 'shared/conformance/sql-on-fhir-v2/tests beside the checkout').toBeDefined()
    expect(suites.reduce((n, s) => n + s.tests.length, 0)).toBe(134)
  })

  for (const suite of suites) {
    describe(suite.file, () => {
      for (const test of suite.tests) {
        it(test.title, async () => {
          const outcome = await runSuiteTest(client, suite, test)
          expect(outcome.error ?? 'passed').toBe('passed')
        })
      }
    })
  }
})
