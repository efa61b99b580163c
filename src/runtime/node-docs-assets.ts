import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DocsAssets } from '../lib/docs-asset-files.ts'

/** Where the Node build copies Swagger UI's files (scripts/build.ts): dist/swagger-ui-dist beside dist/runtime. */
export const BUNDLED_SWAGGER_UI = 'swagger-ui-dist'

/**
 * The folder holding Swagger UI's files: the copy beside the bundle (`dist/swagger-ui-dist`, which the
 * container ships without node_modules), else the installed `swagger-ui-dist` package (tsx, Deno, a
 * host that embeds the service). Undefined when neither is there.
 */
export function swaggerUiDir(): string | undefined {
  const bundled = fileURLToPath(new URL(`../${BUNDLED_SWAGGER_UI}/`, import.meta.url))
  if (existsSync(join(bundled, 'swagger-ui-bundle.js'))) return bundled
  try {
    return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  } catch {
    return undefined
  }
}

/** Swagger UI's files read from `dir` on request (Node and Deno). */
export function nodeDocsAssets(dir = swaggerUiDir()): DocsAssets | undefined {
  if (!dir) return undefined
  return async (name) => {
    try {
      return new Uint8Array(await readFile(join(dir, name)))
    } catch {
      return null
    }
  }
}
