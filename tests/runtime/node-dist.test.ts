import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { servedRuntime, startService } from './processes.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// `npm run build` then the bundle with plain node (what `npm run start:dist` runs), from a temp folder.
describe('Node bundle: npm run build, node dist/runtime/node.js', () => {
  let buildOutput = ''
  beforeAll(() => {
    buildOutput = execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 }).toString()
  }, 130_000)

  it('leaves only the libSQL client outside the bundle, listed in dist/package.json', () => {
    // The build reads the bundle's imports from esbuild's metafile and fails on any other package.
    expect(buildOutput).toContain('outside the bundle: @libsql/client\n')
    const manifest = JSON.parse(readFileSync(`${ROOT}dist/package.json`, 'utf8'))
    expect(Object.keys(manifest.dependencies)).toEqual(['@libsql/client'])
  })

  servedRuntime((dir, _port, env) => startService(process.execPath, [`${ROOT}dist/runtime/node.js`], { cwd: dir, env }))
})
