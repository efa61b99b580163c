import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ContainerRun, parseDockerfile, runContainerRecipe } from '../../scripts/container-check.ts'
import { SMOKE_SECRET } from './processes.ts'
import { smokeSuite } from './smoke.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const recipe = parseDockerfile(readFileSync(`${ROOT}Dockerfile`, 'utf8'))

describe('Dockerfile recipe', () => {
  it('builds in one stage and runs the bundle in a slim non-root stage with a health check and a data volume', () => {
    expect(recipe.stages.map((s) => s.name)).toEqual(['build', 'runtime'])
    const [build, runtime] = recipe.stages.map((s) => s.lines.join('\n'))
    expect(build).toMatch(/RUN npm ci\b/)
    expect(build).toContain('RUN npm run build')
    expect(runtime).toMatch(/npm ci --omit=dev/)
    expect(runtime).toContain('COPY --from=build /app/dist ./dist')
    expect(readFileSync(`${ROOT}Dockerfile`, 'utf8')).toMatch(/FROM node:22-slim AS runtime/)
    expect(recipe.runtime.user).toBe('node')
    expect(recipe.runtime.expose).toEqual(['3001'])
    expect(recipe.runtime.volumes).toEqual(['/app/data'])
    expect(recipe.runtime.env).toMatchObject({ NODE_ENV: 'production', PORT: '3001' })
    expect(recipe.runtime.healthcheck.join(' ')).toContain('/health')
    expect(recipe.runtime.cmd).toEqual(['node', 'dist/runtime/node.js'])
  })
})

describe('container: the recipe built and started in a clean folder, without Docker', () => {
  let container: ContainerRun | undefined

  beforeAll(async () => {
    container = await runContainerRecipe({ JWT_SECRET: SMOKE_SECRET, ENCRYPTION_KEY: 'container-encryption-key' })
  }, 240_000)

  afterAll(async () => {
    await container?.stop()
  })

  it('installs only the libSQL client and its dependencies next to the bundle', () => {
    const lock = JSON.parse(readFileSync(`${container!.app}/dist/package-lock.json`, 'utf8'))
    const installed = Object.keys(lock.packages).filter((p) => p && !lock.packages[p].optional)
    expect(installed).toContain('node_modules/@libsql/client')
    expect(installed.some((p) => /hono|zod|drizzle|ioredis|unstorage/.test(p))).toBe(false)
  })

  smokeSuite(() => ({ base: container!.base, secret: SMOKE_SECRET }))

  it('stops on SIGTERM (docker stop) with exit code 0', async () => {
    const run = container!
    container = undefined
    expect(await run.stop(), run.output()).toBe(0)
    expect(run.output()).toContain('"msg":"stopped"')
  })
})
