/**
 * `npm run docs:sizes`: builds the Workers bundle (scripts/build-worker.ts) and the Node bundle
 * (scripts/build.ts) and writes their sizes, and what is largest in the Workers script, into the
 * generated `sizes` block of docs/runtimes.md. tests/runtime/workers.test.ts fails when the documented
 * Workers size is more than SIZE_DRIFT away from the bundle it builds.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { buildNode } from './build.ts'
import { buildWorker, WORKER_LIMITS } from './build-worker.ts'
import { readBlock, writeBlock } from './doc-block.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DOC = join(ROOT, 'docs/runtimes.md')
/** How far (share of the bundle) the documented Workers size may drift before the test asks for a rerun. */
export const SIZE_DRIFT = 0.05

/** What each large part of the Workers script is, for the doc. */
const WHY: Record<string, string> = {
  fhirpath: 'FHIRPath engine and its R4 model',
  zod: 'validation; all of its locales come along with `z`',
  'src/modules': 'our routes, schemas and services',
  'src/engine': 'formula engine, cells, filters',
  'src/rowstore': 'the row store: writes, view membership, the change feed, view queries',
  'drizzle-orm': 'query builder, D1 and libSQL drivers',
  'src/connectors': 'data-source connectors',
  '@libsql/hrana-client': 'libSQL over HTTP, when no D1 is bound',
  postgres: '`database` sources over TCP sockets',
  hono: 'HTTP framework',
  croner: 'cron schedules',
  '@asteasolutions/zod-to-openapi': 'the OpenAPI document',
}

/** The documented figures of the generated block, or undefined when there is none. */
export function documentedSizes(): { workerGzipBytes: number } | undefined {
  const block = readBlock(DOC, 'sizes')
  const bytes = block && /Workers script[^\n]*\(([\d,]+) B gzip\)/.exec(block)?.[1]
  return bytes ? { workerGzipBytes: Number(bytes.replaceAll(',', '')) } : undefined
}

const kib = (n: number) => `${Math.round(n / 1024).toLocaleString('en')} KiB`
const sizeOf = (dir: string, filter: (f: string) => boolean = () => true) => {
  let raw = 0
  let gzip = 0
  for (const f of readdirSync(dir).filter(filter)) {
    const bytes = readFileSync(join(dir, f))
    raw += bytes.length
    gzip += gzipSync(bytes).length
  }
  return { raw, gzip }
}

async function main() {
  const worker = buildWorker()
  const assets = sizeOf(worker.assetsDir)
  const node = await buildNode()
  const runtimeDir = join(ROOT, 'dist/runtime')
  const js = readdirSync(runtimeDir).filter((f) => f.endsWith('.js'))
  const entry = statSync(join(runtimeDir, 'node.js')).size
  const chunks = js.filter((f) => f !== 'node.js').reduce((sum, f) => sum + statSync(join(runtimeDir, f)).size, 0)
  const swagger = sizeOf(join(ROOT, 'dist/swagger-ui-dist'))
  const share = (worker.gzipBytes / WORKER_LIMITS.budgetGzip) * 100
  const lines = [
    `Written by \`npm run docs:sizes\` on ${new Date().toISOString().slice(0, 10)} (do not edit by hand):`,
    '',
    '| artefact | raw | gzip | budget, limit |',
    '|---|---|---|---|',
    `| Workers script (\`npm run build:worker\`, dist/worker/workers.js) | ${kib(worker.rawBytes)} | **${kib(worker.gzipBytes)}** (${worker.gzipBytes.toLocaleString('en')} B gzip) | budget 1 MiB gzip (${share.toFixed(0)} % used); Workers limit 3 MiB free, 10 MiB paid |`,
    `| Workers static assets (Swagger UI's script, stylesheet, licence; dist/worker-assets) | ${kib(assets.raw)} | ${kib(assets.gzip)} | not part of the script's size |`,
    `| Node bundle entry (\`npm run build\`, dist/runtime/node.js), read at every start | ${kib(entry)} | | |`,
    `| Node chunks read on first use (${js.length - 1}: FHIRPath, exceljs, pdfkit, postgres, cache drivers) | ${kib(chunks)} | | |`,
    `| Swagger UI beside the Node bundle (dist/swagger-ui-dist) | ${kib(swagger.raw)} | ${kib(swagger.gzip)} | |`,
    '',
    `Largest parts of the Workers script (minified, before gzip; esbuild's metafile): ${worker.parts
      .slice(0, 10)
      .map((p) => `${p.name} ${kib(p.bytes)}${WHY[p.name] ? ` (${WHY[p.name]})` : ''}`)
      .join(', ')}.`,
  ]
  writeBlock(DOC, 'sizes', lines.join('\n'))
  console.log(lines.join('\n'))
  console.log(`\ndocs/runtimes.md updated; the Node bundle leaves outside: ${node.externalImports.join(', ')}`)
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
