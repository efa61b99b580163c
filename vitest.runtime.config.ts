import { defineConfig } from 'vitest/config'

// `npm run test:runtime`: the smoke suite against every runtime (Node, the bundled Node server, Deno,
// Workers in workerd, the container recipe). Real processes on loopback ports, one file at a time.
export default defineConfig({
  test: {
    include: ['tests/runtime/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 240_000,
    pool: 'forks',
    fileParallelism: false,
  },
})
