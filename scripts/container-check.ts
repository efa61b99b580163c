/**
 * `npm run test:container` runs tests/runtime/container.test.ts, which uses these steps to prove the
 * Dockerfile's recipe without a Docker engine. In a clean temporary folder:
 *
 * 1. build stage: the build context (the checkout minus .dockerignore), the dev dependency tree
 *    linked in place of the stage's `npm ci` (nothing is downloaded again), then `npm run build`;
 * 2. runtime stage: `dist/` and `migrations/` only, `npm ci --omit=dev` in `dist/` (the bundle's
 *    one dependency, native libSQL, from the local npm cache when it has it);
 * 3. start: the runtime stage's CMD with its ENV (`/app` mapped to the folder), then its
 *    HEALTHCHECK command until it passes.
 *
 * `tsx scripts/container-check.ts` runs the three steps, then stops the server with SIGTERM.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

export interface DockerRecipe {
  stages: { name: string; lines: string[] }[]
  /** The last stage's ENV, HEALTHCHECK command, CMD, EXPOSE, USER and VOLUME. */
  runtime: {
    env: Record<string, string>
    healthcheck: string[]
    cmd: string[]
    expose: string[]
    user?: string
    volumes: string[]
  }
}

/** Reads the Dockerfile's instructions (continuation lines joined, comments dropped) per stage. */
export function parseDockerfile(text: string): DockerRecipe {
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
  const stages: DockerRecipe['stages'] = []
  for (const line of instructions) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line)
    if (from) stages.push({ name: from[1] ?? String(stages.length), lines: [] })
    else stages.at(-1)?.lines.push(line)
  }
  const last = stages.at(-1)?.lines ?? []
  const arg = (keyword: string) =>
    last.filter((l) => l.toUpperCase().startsWith(`${keyword} `)).map((l) => l.slice(keyword.length + 1).trim())
  const env: Record<string, string> = {}
  for (const spec of arg('ENV')) for (const [, k, v] of spec.matchAll(/(\w+)=(\S+)/g)) env[k] = v
  const health = arg('HEALTHCHECK')[0] ?? ''
  const json = (s: string | undefined) => (s ? (JSON.parse(s) as string[]) : [])
  return {
    stages,
    runtime: {
      env,
      healthcheck: json(/CMD\s+(\[.*\])$/.exec(health)?.[1]),
      cmd: json(arg('CMD').at(-1)),
      expose: arg('EXPOSE'),
      user: arg('USER').at(-1),
      volumes: arg('VOLUME'),
    },
  }
}

/** The top-level entries `COPY . .` sends (root-level .dockerignore patterns; `*` globs). */
function buildContext(root: string): string[] {
  const patterns = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((p) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`))
  return readdirSync(root).filter((name) => !patterns.some((p) => p.test(name)))
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export interface ContainerRun {
  /** Where the runtime stage lives (`/app` of the image). */
  app: string
  base: string
  proc: ChildProcess
  output: () => string
  /** SIGTERM, SIGKILL after 10 s; resolves with the exit code; removes the folder. */
  stop(): Promise<number | null>
}

function run(cmd: string, args: string[], cwd: string, timeout: number, env: NodeJS.ProcessEnv = process.env) {
  try {
    execFileSync(cmd, args, { cwd, stdio: 'pipe', timeout, env })
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer }
    throw new Error(`${[cmd, ...args].join(' ')} failed:\n${stderr?.toString() ?? ''}${stdout?.toString() ?? ''}`)
  }
}

/** Builds and starts the image's recipe in a temporary folder; `secrets` are what `docker run -e` passes. */
export async function runContainerRecipe(
  secrets: Record<string, string>,
  log: (line: string) => void = () => {},
): Promise<ContainerRun> {
  const recipe = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))
  const work = mkdtempSync(join(tmpdir(), 'container-'))
  try {
    const build = join(work, 'build')
    mkdirSync(build)
    for (const entry of buildContext(ROOT)) cpSync(join(ROOT, entry), join(build, entry), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(build, 'node_modules'), 'dir')
    log('build stage: npm run build')
    run('npm', ['run', '-s', 'build'], build, 120_000)

    const app = join(work, 'app')
    mkdirSync(app)
    cpSync(join(build, 'dist'), join(app, 'dist'), { recursive: true })
    log('runtime stage: npm ci --omit=dev in dist/')
    run('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], join(app, 'dist'), 180_000)
    cpSync(join(build, 'migrations'), join(app, 'migrations'), { recursive: true })
    mkdirSync(join(app, 'data', 'files'), { recursive: true })

    const port = await freePort()
    const env = Object.fromEntries(Object.entries(recipe.runtime.env).map(([k, v]) => [k, v.replaceAll('/app/', `${app}/`)]))
    const fullEnv = { PATH: process.env.PATH ?? '', HOME: app, ...env, PORT: String(port), ...secrets }
    const [cmd, ...args] = recipe.runtime.cmd
    log(`start: ${recipe.runtime.cmd.join(' ')} on port ${port}`)
    let out = ''
    const proc = spawn(cmd === 'node' ? process.execPath : cmd, args, {
      cwd: app,
      env: fullEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    proc.stdout!.on('data', (d) => {
      out += d
    })
    proc.stderr!.on('data', (d) => {
      out += d
    })
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
    const stop = async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM')
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
      rmSync(work, { recursive: true, force: true })
      return proc.exitCode
    }

    // The HEALTHCHECK command itself, as Docker runs it inside the container, until it passes.
    const [hcmd, ...hargs] = recipe.runtime.healthcheck
    const deadline = Date.now() + 30_000
    for (;;) {
      if (proc.exitCode !== null) {
        await stop()
        throw new Error(`the server exited (${proc.exitCode}): ${out}`)
      }
      try {
        run(hcmd === 'node' ? process.execPath : hcmd, hargs, app, 5_000, fullEnv)
        break
      } catch {
        if (Date.now() > deadline) {
          await stop()
          throw new Error(`HEALTHCHECK did not pass within 30 s: ${out}`)
        }
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    log('HEALTHCHECK passed')
    return { app, base: `http://127.0.0.1:${port}`, proc, output: () => out, stop }
  } catch (err) {
    rmSync(work, { recursive: true, force: true })
    throw err
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now()
  const secrets = { JWT_SECRET: crypto.randomUUID().repeat(2), ENCRYPTION_KEY: crypto.randomUUID() }
  const container = await runContainerRecipe(secrets, (line) => console.log(`[container] ${line}`))
  const health = await (await fetch(`${container.base}/health`)).json()
  console.log(`[container] GET /health: ${JSON.stringify(health)}`)
  const code = await container.stop()
  console.log(`[container] stopped with exit code ${code} after ${((Date.now() - started) / 1000).toFixed(1)} s`)
  if (code !== 0 || health.status !== 'healthy') process.exit(1)
}
