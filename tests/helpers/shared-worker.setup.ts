import { afterAll, vi } from 'vitest'

// Runs for every file of the `shared` project (vitest.config.ts), whose files share a worker: what a
// file patched through vi is undone when it ends, even if a test failed before its own cleanup.
afterAll(() => {
  vi.useRealTimers()
  vi.restoreAllMocks()
  vi.unstubAllGlobals()
  vi.unstubAllEnvs()
})
