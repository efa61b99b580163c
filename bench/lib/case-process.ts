import { spawn } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'

/**
 * A bench case measured in a process of its own, run from a bundle as the service runs from
 * `dist/`: no TypeScript loader in the measured process (tsx alone holds ~60 MiB), and what the
 * code loads by dynamic import() on first use in chunks of its own, as scripts/build.ts splits it.
 */

const root = new URL('../..', import.meta.url).pathname

/** Bundles bench/<name>.ts into `outdir` (`dist/bench` unless told); answers the entry's path. */
export async function bundleCase(name: string, outdir = join(root, 'dist/bench')): Promise<string> {
  // Chunk names carry a content hash: clear the previous build's, or they pile up.
  if (existsSync(outdir)) for (const f of readdirSync(outdir)) if (f.startsWith(`${name}.`)) rmSync(join(outdir, f))
  await build({
    entryPoints: [join(root, `bench/${name}.ts`)],
    outdir,
    splitting: true,
    chunkNames: `${name}.[name]-[hash]`,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['@libsql/client', 'exceljs', 'pdfkit', 'postgres'],
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  })
  return join(outdir, `${name}.mjs`)
}

/**
 * Runs a bundled case (`bundle`, with `args`, node's own `nodeArgs` before it) in a process of its
 * own; answers the JSON of the last line it printed. The case's progress and errors go to this
 * process's stderr. The libSQL native module sometimes panics while a process exits, after the
 * result was printed: a result line is the case's measurement whatever the exit code.
 */
export function runCaseProcess<T>(
  bundle: string,
  args: readonly string[],
  { name, nodeArgs = [] }: { name: string; nodeArgs?: readonly string[] },
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, bundle, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
    })
    child.on('error', reject)
    child.on('exit', (code) => {
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as T)
      } catch {
        reject(new Error(`${name} case failed (exit ${code}) without a result: ${out}`))
      }
    })
  })
}
