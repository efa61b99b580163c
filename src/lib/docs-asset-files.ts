/**
 * The Swagger UI files `/docs` loads (src/http/docs-assets.ts serves them) and how a runtime hands them
 * over (`Deps.docsAssets`): a leaf, so the deps can name the type without importing the HTTP layer.
 */

/** The files the page loads, with their media types. */
export const DOCS_ASSET_TYPES = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
} as const

export type DocsAssetName = keyof typeof DOCS_ASSET_TYPES

/** A runtime's Swagger UI files: the file's bytes or stream, or null when it has none. */
export type DocsAssets = (name: DocsAssetName) => Promise<Uint8Array<ArrayBuffer> | ReadableStream | null>
