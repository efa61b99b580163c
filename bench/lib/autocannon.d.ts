// Minimal types for the parts of autocannon 9 the benchmark uses (the package ships none).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  interface Options {
    url: string
    connections?: number
    duration?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    timeout?: number
    /** Called with each connection's client as it is made (in this process: no workers). */
    setupClient?: (client: Client) => void
  }

  interface Client {
    /** The sequence of requests this connection repeats. */
    setRequests(requests: { method?: string; path?: string; headers?: Record<string, string>; body?: string }[]): void
  }

  interface Result {
    requests: { average: number; total: number }
    latency: { p50: number; p99: number; average: number }
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
  }

  interface Instance extends EventEmitter {
    stop(): void
  }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance
  export default autocannon
  export type { Client, Instance, Options, Result }
}
