import { type ChildProcess, spawn } from 'node:child_process'
import { openSync } from 'node:fs'

const children = new Set<ChildProcess>()

export interface Started {
  child: ChildProcess
  url: string
}

/**
 * Starts a server as a child process with its output in `logFile` (a file, so the server's log
 * writes never wait on this process), and waits until `probePath` answers (any status).
 */
export async function startServer(
  name: string,
  args: string[],
  env: Record<string, string>,
  logFile: string,
  port: number,
  probePath: string,
): Promise<Started> {
  const out = openSync(logFile, 'a')
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', out, out] })
  children.add(child)
  child.once('exit', () => children.delete(child))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}; see ${logFile}`)
    try {
      await fetch(url + probePath, { signal: AbortSignal.timeout(1000) })
      return { child, url }
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw new Error(`${name} did not answer on ${url} within 20 s; see ${logFile}`)
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child is gone. */
export function stop(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

export const stopAll = () => Promise.all([...children].map((c) => stop(c)))

/** Synchronous last resort on process exit. */
export function killAllNow() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
}

/** A free loopback port. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net')
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}
