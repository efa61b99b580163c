import { defineConfig } from 'vitest/config'

/**
 * The API suite (module, HTTP and OpenAPI tests: everything that goes through makeTestApp) against
 * the app served by another runtime: `PANEL_TEST_TARGET` selects it for tests/helpers/app.ts.
 * `npm test` runs the same files in-process on Node.
 */
export const API_SUITE = [
  'tests/modules/**/*.test.ts',
  'tests/http/**/*.test.ts',
  'tests/openapi.test.ts',
  'tests/connectors/file.api.test.ts',
  'tests/connectors/database.sync.test.ts',
  'tests/connectors/fhir.bulk.api.test.ts',
  'tests/connectors/fhir.subscription.api.test.ts',
  'tests/connectors/fhir.subscription.enable.api.test.ts',
  'tests/connectors/fhir.subscription.race.api.test.ts',
  'tests/connectors/fhir.bulk.resume.test.ts',
]

export function targetConfig(target: 'workers' | 'deno') {
  process.env.PANEL_TEST_TARGET = target
  return defineConfig({
    test: {
      name: target,
      include: API_SUITE,
      globalSetup: [`tests/helpers/remote/${target}.setup.ts`],
      env: { PANEL_TEST_TARGET: target },
      testTimeout: 30_000,
      hookTimeout: 180_000,
      pool: 'forks',
      // One server per vitest worker for all the files it runs (see tests/helpers/remote/app.ts).
      isolate: false,
    },
  })
}
