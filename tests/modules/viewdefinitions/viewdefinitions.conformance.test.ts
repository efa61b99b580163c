import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { loadSuites, runSuiteTest, SUITE_TEST_COUNT } from '../../helpers/sof-suite.ts'

/**
 * The 134 official SQL-on-FHIR v2 tests, every one through `POST /api/$viewdefinition-run` of one
 * app (tests/helpers/sof-suite.ts reads them from tests/fixtures/sql-on-fhir-v2, vendored in the checkout).
 */

const suites = loadSuites()

let client: TestClient

beforeAll(async () => {
  const { app } = await makeTestApp()
  client = clientFor(app, 'tenant-sof', 'user-sof')
})

describe('SQL-on-FHIR v2 official tests through $viewdefinition-run', () => {
  it('finds all 134 tests in the vendored suite', () => {
    expect(suites).toHaveLength(22)
    expect(suites.reduce((n, s) => n + s.tests.length, 0)).toBe(SUITE_TEST_COUNT)
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
