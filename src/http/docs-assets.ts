/**
 * Swagger UI served by the service itself (issue 11, point 7): the `/docs` page loads its script and
 * stylesheet from `<mount>/docs/assets/swagger-ui-dist@<version>/…`, never from a CDN, so the page
 * works on a network without internet. Each runtime says where the files are (`Deps.docsAssets`):
 * the installed `swagger-ui-dist` package or a copy beside the Node bundle (src/runtime/node-docs-assets.ts),
 * the Workers static-assets binding (src/runtime/workers.ts). The version is in the URL, so the
 * files are cached for a year as immutable; a new version is a new URL.
 */
import { swaggerUI } from '@hono/swagger-ui'
import type { Hono } from 'hono'
import swaggerUiDist from 'swagger-ui-dist/package.json' with { type: 'json' }
import { DOCS_ASSET_TYPES, type DocsAssetName } from '../lib/docs-asset-files.ts'
import type { AppEnv } from './context.ts'

export const SWAGGER_UI_VERSION: string = swaggerUiDist.version

/** Relative to the page (`<mount>/docs`), so a mounted app loads its own copy. */
const ASSET_BASE = './docs/assets'
const DOCS_ASSET_FOLDER = `swagger-ui-dist@${SWAGGER_UI_VERSION}`
/** Where the files are served, relative to the app's mount. */
export const DOCS_ASSET_PATH = `/docs/assets/${DOCS_ASSET_FOLDER}`
export const IMMUTABLE = 'public, max-age=31536000, immutable'

const isAssetName = (name: string): name is DocsAssetName => Object.hasOwn(DOCS_ASSET_TYPES, name)

/** `GET /docs` (the page) and `GET /docs/assets/swagger-ui-dist@<version>/<file>` on `app`. */
export function mountDocs(app: Hono<AppEnv>) {
  // @hono/swagger-ui builds `<baseUrl>/swagger-ui-dist@<version>/<file>`: with a relative base the
  // page names no host at all. `url` is relative too, so the UI at <mount>/docs loads <mount>/openapi.json.
  app.get('/docs', swaggerUI({ url: './openapi.json', title: 'Panels API', baseUrl: ASSET_BASE, version: SWAGGER_UI_VERSION }))
  // A parameter, not the literal folder: Hono's router does not match a literal path segment with '@'.
  app.get('/docs/assets/:folder/:file', async (c) => {
    const name = c.req.param('file')
    const assets = c.get('deps').docsAssets
    const current = c.req.param('folder') === DOCS_ASSET_FOLDER
    const body = current && isAssetName(name) && assets ? await assets(name) : null
    if (!body) return c.notFound()
    return c.body(body, 200, { 'content-type': DOCS_ASSET_TYPES[name as DocsAssetName], 'cache-control': IMMUTABLE })
  })
}
