import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'
import { ISOLATED } from './vitest.projects.ts'

/** What both projects share (not through `extends`, which would merge `include` lists). */
const COMMON = { testTimeout: 20_000, hookTimeout: 30_000, pool: 'forks' } as const

export default defineConfig({
  test: {
    // vitest's default is one worker fewer than the cores, i.e. a single worker on two cores. The
    // suite waits on sockets, child processes and timers a good part of its time, so two workers
    // on two cores finish sooner.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      { test: { ...COMMON, name: 'isolated', include: ISOLATED, isolate: true } },
      {
        test: {
          ...COMMON,
          name: 'shared',
          include: ['tests/**/*.test.ts'],
          exclude: ['tests/runtime/**', 'node_modules/**', ...ISOLATED],
          isolate: false,
          // Undoes spies, fake timers and stubs after each file, so a file that fails halfway
          // leaves none of them to the next file in the worker.
          setupFiles: ['tests/helpers/shared-worker.setup.ts'],
        },
      },
    ],
  },
})
