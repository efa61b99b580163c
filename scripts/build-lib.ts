/**
 * `npm run build:lib` (also run by `npm pack`): the package a host installs (docs/embedding.md).
 *
 * - `dist/lib/index.js`: src/index.ts bundled by esbuild as ESM for Node, with every package left as
 *   an import. Those resolve in the host to the package's dependencies, and `hono` to the host's
 *   own copy (a peer dependency): two copies of Hono break every mounted route. The build fails on
 *   an import of a package that package.json does not declare.
 * - `dist/lib/**.d.ts`: tsc's declarations of exactly the files `index.d.ts` reaches, with `.js`
 *   import specifiers. They may name only peer dependencies: the database and cache libraries'
 *   own declarations do not pass a strict host's `skipLibCheck: false`, so the build fails when the
 *   public types reach them (or any declaration tsc could not write for a file they reach).
 *
 * `dist/lib/` sits two levels below the package root like src/runtime/, so the migrations are found
 * the same way (src/runtime/migrate.ts resolves `../../migrations` from the module's URL).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const LIB_DIR = join(ROOT, 'dist', 'lib')
const TYPES_TMP = join(ROOT, 'dist', 'lib-types')

interface Manifest {
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}

/** `hono/jwt` → `hono`, `@hono/zod-openapi/x` → `@hono/zod-openapi`. */
export const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/')

const isBuiltin = (specifier: string) => specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0])

/** Bundles the JavaScript; returns its size and the packages it imports. */
async function buildJs(manifest: Manifest) {
  const result = await build({
    entryPoints: [join(ROOT, 'src/index.ts')],
    outdir: LIB_DIR,
    bundle: true,
    // Code loaded by dynamic import() gets chunks beside index.js, read only when used.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // Swagger UI's version is read from its package.json: bundled as data, so the output has no JSON
    // import (one Node would refuse without an import attribute, which the external form loses).
    plugins: [
      {
        name: 'inline-swagger-ui-version',
        setup(b) {
          b.onResolve({ filter: /^swagger-ui-dist\/package\.json$/ }, (args) => ({
            path: createRequire(join(ROOT, 'package.json')).resolve(args.path),
          }))
        },
      },
    ],
    // Not minified and without a source map: a host's stack traces read as our code does.
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  })
  const outputs = Object.entries(result.metafile.outputs).filter(([path]) => path.endsWith('.js'))
  const imported = outputs.flatMap(([, o]) => o.imports.filter((i) => i.external && !isBuiltin(i.path)).map((i) => i.path))
  const packages = [...new Set(imported.map(packageOf))].sort()
  const declared = { ...manifest.dependencies, ...manifest.peerDependencies }
  const undeclared = packages.filter((p) => !(p in declared))
  if (undeclared.length > 0) throw new Error(`dist/lib imports packages package.json does not declare: ${undeclared.join(', ')}`)
  const bytes = outputs.reduce((sum, [, o]) => sum + o.bytes, 0)
  return { bytes, files: outputs.length, packages }
}

/** tsc's diagnostics per source file (paths relative to the root). */
function emitDeclarations(): Map<string, string[]> {
  rmSync(TYPES_TMP, { recursive: true, force: true })
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.lib.json'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  })
  if (tsc.error) throw tsc.error
  const problems = new Map<string, string[]>()
  for (const line of `${tsc.stdout}${tsc.stderr}`.split('\n')) {
    const m = /^(.+?)\(\d+,\d+\): error /.exec(line)
    if (!m) continue
    const file = relative(ROOT, resolve(ROOT, m[1]))
    problems.set(file, [...(problems.get(file) ?? []), line])
  }
  if (tsc.status !== 0 && problems.size === 0) throw new Error(`tsc -p tsconfig.lib.json failed:\n${tsc.stdout}${tsc.stderr}`)
  return problems
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"]+)\1/g

/**
 * Copies the declarations `index.d.ts` reaches into dist/lib, rewriting `./x.ts` to `./x.js`.
 * Fails on a reference to a package other than `allowed`, and on a reached file tsc reported.
 */
function copyPublicDeclarations(allowed: string[], problems: Map<string, string[]>) {
  const reached: string[] = []
  const pending = ['index.d.ts']
  while (pending.length > 0) {
    const file = pending.pop()!
    if (reached.includes(file)) continue
    reached.push(file)
    const source = `src/${file.replace(/\.d\.ts$/, '.ts')}`
    if (problems.has(source)) throw new Error(`tsc could not declare ${source}:\n${problems.get(source)!.join('\n')}`)
    let text = readFileSync(join(TYPES_TMP, file), 'utf8')
    if (/^\/\/\/\s*<reference/m.test(text)) throw new Error(`${file} carries a triple-slash reference; the public types must not`)
    text = text.replace(SPECIFIER, (whole, quote: string, spec: string) => {
      if (!spec.startsWith('.')) {
        if (!allowed.includes(packageOf(spec)))
          throw new Error(`the public types reach '${spec}' (in ${source}); they may name only ${allowed.join(', ')}`)
        return whole
      }
      const target = join(dirname(file), spec).replace(/\.(ts|js)$/, '')
      pending.push(`${target}.d.ts`)
      return whole.replace(`${quote}${spec}${quote}`, `${quote}${spec.replace(/\.ts$/, '.js')}${quote}`)
    })
    mkdirSync(dirname(join(LIB_DIR, file)), { recursive: true })
    writeFileSync(join(LIB_DIR, file), text)
  }
  return reached.sort()
}

/** Builds dist/lib; returns what it wrote and what it imports. */
export async function buildLib() {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest
  rmSync(LIB_DIR, { recursive: true, force: true })
  const js = await buildJs(manifest)
  try {
    const declarations = copyPublicDeclarations(Object.keys(manifest.peerDependencies ?? {}), emitDeclarations())
    return { ...js, declarations }
  } finally {
    rmSync(TYPES_TMP, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { bytes, files, packages, declarations } = await buildLib()
  console.log(
    `built dist/lib/index.js (${(bytes / 1024).toFixed(0)} KiB in ${files} file(s)) and ${declarations.length} declaration files`,
  )
  console.log(`packages it imports: ${packages.join(', ')}`)
}
