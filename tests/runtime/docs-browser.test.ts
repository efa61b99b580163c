import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, type Service, SMOKE_SECRET, serverEnv, startService, waitForHealth } from './processes.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Debian's chromium package (`.ci/run` installs it); CHROMIUM_PATH names another binary. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/**
 * `chromium --headless --dump-dom <url>` in a fresh profile, on loopback only: every host name but
 * 127.0.0.1 fails to resolve, and anything not on loopback goes to a proxy that is not there (Chromium
 * never proxies loopback). `--virtual-time-budget` lets the page's scripts and fetches finish first.
 */
async function dumpDom(url: string, profile: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--proxy-server=http://127.0.0.1:9',
      '--virtual-time-budget=20000',
      '--dump-dom',
      url,
    ],
    { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
  )
  return stdout
}

// The appliance case of issue 11 (point 7): no internet, only the service. Swagger UI must render
// from what the service itself serves.
describe('docs page in headless Chromium without internet (Node server)', () => {
  let dir = ''
  let base = ''
  let service: Service | undefined

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`)
    dir = mkdtempSync(join(tmpdir(), 'docs-browser-'))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    service = startService(
      process.execPath,
      ['--import', `${ROOT}node_modules/tsx/dist/loader.mjs`, `${ROOT}src/runtime/node.ts`],
      { cwd: dir, env: { ...serverEnv(join(dir, 'data'), port, SMOKE_SECRET), TSX_TSCONFIG_PATH: `${ROOT}tsconfig.json` } },
    )
    await waitForHealth(service, base)
  }, 70_000)

  afterAll(async () => {
    await service?.stop(2_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it('renders Swagger UI with the operations of the OpenAPI document', async () => {
    const dom = await dumpDom(`${base}/docs`, join(dir, 'profile'))
    // The rendered UI: the document's title and its operations, not the empty container. (Booleans,
    // so a failure does not print the whole DOM.)
    const rendered = (pattern: RegExp | string) => (typeof pattern === 'string' ? dom.includes(pattern) : pattern.test(dom))
    expect(rendered('<div id="swagger-ui">'), 'the page itself').toBe(true)
    expect(rendered(/<h1 class="title">Panels API/), "the document's title").toBe(true)
    for (const path of ['/health', '/api/panels', '/api/views/{id}/publish']) {
      expect(rendered(`class="opblock-summary-path" data-path="${path}"`), `operation ${path}`).toBe(true)
    }
    // …from the files the service served (its access log), not from a cache or another host.
    for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
      expect(service!.output()).toMatch(new RegExp(`"path":"/docs/assets/swagger-ui-dist@[\\d.]+/${file}","status":200`))
    }
  }, 100_000)
})
