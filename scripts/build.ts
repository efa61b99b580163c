/**
 * `npm run build`: bundles the Node entry into ESM, `dist/runtime/node.js`, so the service runs with
 * plain `node` (no tsx, no TypeScript sources). What the code loads by dynamic `import()` on first
 * use (the FHIRPath engine and its R4 model, the Redis and fs cache drivers) gets chunks of its own
 * beside it, read only when used: inlined, fhirpath's code alone held ~20 MB in a process that never
 * evaluates a FHIRPath (a million-row CSV sync, bench:sync). Everything is bundled except the libSQL
 * client, whose native binary cannot be: the build writes `dist/package.json` and a
 * `dist/package-lock.json` cut from the project's lockfile with exactly that package and its
 * dependencies, so `npm ci --omit=dev` in `dist/` installs the bundle's only runtime dependency
 * (the container does this). Migrations are read at run time from `<root>/migrations`
 * (src/runtime/migrate.ts resolves `../../migrations` from the bundle's URL, the same from src/).
 * Swagger UI's script and stylesheet are copied into `dist/swagger-ui-dist/` for the `/docs` page
 * (src/runtime/node-docs-assets.ts), so the bundle serves them without node_modules.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'
import { DOCS_ASSET_TYPES } from '../src/lib/docs-asset-files.ts'
import { BUNDLED_SWAGGER_UI } from '../src/runtime/node-docs-assets.ts'

/** The packages left outside the bundle: native code. */
export const EXTERNAL_PACKAGES = ['@libsql/client']

/**
 * pdfkit's Node build reads its standard fonts from its own package folder at run time, which a
 * single-file bundle does not have; its browser build has no file access and takes the fonts through
 * `registerStdFonts` (src/modules/rows/rows.export.pdf.ts registers them from their own modules,
 * which the bundle includes). The bundle therefore uses the browser build.
 */
const pdfkitSelfContained: Plugin = {
  name: 'pdfkit-self-contained',
  setup(b) {
    b.onResolve({ filter: /^pdfkit$/ }, () => ({
      path: fileURLToPath(new URL('../node_modules/pdfkit/js/pdfkit.browser.mjs', import.meta.url)),
    }))
  },
}

type LockEntry = {
  version: string
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
  [key: string]: unknown
}

/**
 * The lockfile entries of `roots` and everything they depend on, resolved the way Node resolves
 * them (a nested `node_modules` first, then the parents'). Dev flags are dropped: these are the
 * bundle's production dependencies.
 */
export function lockSubset(packages: Record<string, LockEntry>, roots: string[]): Record<string, LockEntry> {
  const out: Record<string, LockEntry> = {}
  const resolve = (from: string, name: string) => {
    for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf('/node_modules/')))) {
      const candidate = `${base ? `${base}/` : ''}node_modules/${name}`
      if (packages[candidate]) return candidate
      if (!base) return undefined
    }
  }
  const visit = (path: string) => {
    if (out[path]) return
    const { dev: _dev, devOptional: _devOptional, ...entry } = packages[path]
    out[path] = entry as LockEntry
    const optionalPeers = Object.entries(entry.peerDependenciesMeta ?? {}).filter(([, m]) => m.optional)
    const wanted = {
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...Object.fromEntries(Object.entries(entry.peerDependencies ?? {}).filter(([n]) => !optionalPeers.some(([p]) => p === n))),
    }
    for (const name of Object.keys(wanted)) {
      const found = resolve(path, name)
      if (found) visit(found)
      else if (!entry.optionalDependencies?.[name]) throw new Error(`${path} needs ${name}, which the lockfile does not hold`)
    }
  }
  for (const root of roots) {
    if (!packages[`node_modules/${root}`]) throw new Error(`${root} is not in package-lock.json`)
    visit(`node_modules/${root}`)
  }
  return out
}

/** `dist/package.json` and `dist/package-lock.json`: the bundle's production dependencies. */
function writeDistManifests(outdir: string) {
  const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockEntry> }
  const subset = lockSubset(lock.packages, EXTERNAL_PACKAGES)
  const dependencies = Object.fromEntries(EXTERNAL_PACKAGES.map((n) => [n, subset[`node_modules/${n}`].version]))
  const manifest = { name: 'panel-service-dist', private: true, type: 'module', dependencies }
  writeFileSync(`${outdir}/package.json`, `${JSON.stringify(manifest, null, 2)}\n`)
  const distLock = {
    name: manifest.name,
    lockfileVersion: 3,
    requires: true,
    packages: { '': { name: manifest.name, dependencies }, ...subset },
  }
  writeFileSync(`${outdir}/package-lock.json`, `${JSON.stringify(distLock, null, 2)}\n`)
}

/**
 * Swagger UI's script and stylesheet (and the package's licence) copied from the installed
 * `swagger-ui-dist` into `dir`: the `/docs` page loads them from the service, and the bundle runs
 * without node_modules (src/runtime/node-docs-assets.ts finds them beside it; build-worker.ts uses
 * this for the Workers static assets).
 */
export function copySwaggerUi(dir: string) {
  const from = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  for (const file of [...Object.keys(DOCS_ASSET_TYPES), 'LICENSE', 'NOTICE']) cpSync(join(from, file), join(dir, file))
}

/** Builds `dist/`; returns the entry's size, its chunks and the bare imports left in the bundle. */
export async function buildNode(outdir = 'dist') {
  // Only what this build writes: dist/worker (npm run build:worker) stays.
  rmSync(`${outdir}/runtime`, { recursive: true, force: true })
  const outfile = `${outdir}/runtime/node.js`
  const result = await build({
    entryPoints: ['src/runtime/node.ts'],
    outdir: `${outdir}/runtime`,
    // Chunks land beside node.js, so code resolving files from its own URL (migrations) stays right.
    splitting: true,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    legalComments: 'none',
    external: EXTERNAL_PACKAGES,
    plugins: [pdfkitSelfContained],
    // Bundled CommonJS dependencies may call require() for Node built-ins; give each ESM file one.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    metafile: true,
    logLevel: 'warning',
  })
  writeDistManifests(outdir)
  copySwaggerUi(`${outdir}/${BUNDLED_SWAGGER_UI}`)
  // metafile keys are relative to the working directory
  const outputs = Object.entries(result.metafile.outputs).filter(([path]) => path.endsWith('.js'))
  const [, entry] = outputs.find(([path]) => path.endsWith('runtime/node.js'))!
  const builtin = (p: string) => p.startsWith('node:') || builtinModules.includes(p.split('/')[0])
  const imports = outputs.flatMap(([, output]) => output.imports)
  const bare = [...new Set(imports.filter((i) => i.external && !builtin(i.path)).map((i) => i.path))]
  return { outfile, bytes: entry.bytes, chunks: outputs.length - 1, externalImports: bare }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { outfile, bytes, chunks, externalImports } = await buildNode()
  const unexpected = externalImports.filter((p) => !EXTERNAL_PACKAGES.includes(p))
  if (unexpected.length > 0) throw new Error(`the bundle imports packages it does not bundle: ${unexpected.join(', ')}`)
  console.log(`built ${outfile} (${(bytes / 1024).toFixed(0)} KiB) and ${chunks} chunks it loads on first use`)
  console.log(`outside the bundle: ${externalImports.join(', ') || 'nothing'}`)
  console.log('dist/package.json + dist/package-lock.json list them: `npm ci --omit=dev` in dist/ installs them')
}
