import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'
import { buildWorker } from '../../../scripts/build-worker.ts'
import { migrateLocalD1 } from '../local-d1.ts'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

declare module 'vitest' {
  export interface ProvidedContext {
    /** The Workers bundle of this run (entered through the test front) and a local D1 state migrated by wrangler. */
    workersBundle: { script: string; outdir: string; state: string }
  }
}

/**
 * globalSetup of vitest.workers.config.ts: bundles the Workers entry once (as `wrangler deploy`
 * does) and migrates one local D1 with the deploy step's own command; every test file starts its
 * Miniflare on a copy of that state.
 */
export default function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), 'workers-suite-'))
  const bundle = buildWorker(join(dir, 'bundle'))
  const state = join(dir, 'state')
  migrateLocalD1(state)
  // The bundle stays as built; the test-only front (the test clock) is a module of its own beside it.
  for (const file of ['workers-front.mjs', 'test-clock.mjs']) {
    copyFileSync(join(ROOT, 'tests/helpers/remote', file), join(bundle.outdir, file))
  }
  if (!bundle.script.endsWith('/workers.js')) throw new Error(`unexpected bundle entry ${bundle.script}`)
  project.provide('workersBundle', { script: join(bundle.outdir, 'workers-front.mjs'), outdir: bundle.outdir, state })
  return () => rmSync(dir, { recursive: true, force: true })
}
