/**
 * `npm run build`: bundles the Node entry into one ESM file, `dist/runtime/node.js`, so the service
 * runs with plain `node` (no tsx, no TypeScript sources). Only the libSQL client (native binary)
 * and ioredis (loaded lazily by the Redis cache driver) stay external; both are in node_modules.
 * Migrations are read at run time from `<repo>/migrations` (src/runtime/migrate.ts resolves
 * `../../migrations` from the bundle's own URL, which is the same folder from src/ and dist/).
 */
import { rmSync } from 'node:fs'
import { build } from 'esbuild'

const outfile = 'dist/runtime/node.js'
rmSync('dist', { recursive: true, force: true })

const result = await build({
  entryPoints: ['src/runtime/node.ts'],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  legalComments: 'none',
  external: ['@libsql/client', '@libsql/*', 'libsql', 'ioredis'],
  // Bundled CommonJS dependencies may call require() for Node built-ins; give the ESM bundle one.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  metafile: true,
  logLevel: 'warning',
})

const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0)
console.log(`built ${outfile} (${(bytes / 1024).toFixed(0)} KiB with source map)`)
