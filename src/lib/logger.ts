export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'
export type LogFields = Record<string, unknown>

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  enabled(level: LogLevel): boolean
}

/**
 * Structured JSON logs, one line per event (`{"level","time","msg",...fields}`), written through
 * `write` (console.log by default). Runtimes pass a cheaper writer: the Node entry buffers lines
 * and writes them once per event-loop turn (src/runtime/node-primitives.ts).
 */
export function createLogger(level: LogLevel, write: (line: string) => void = console.log): Logger {
  const min = RANK[level]
  const emit = (lvl: Exclude<LogLevel, 'silent'>) => {
    const head = `{"level":"${lvl}","time":"`
    return (msg: string, fields?: LogFields) => {
      if (RANK[lvl] < min) return
      // The line JSON.stringify({ level, time, msg, ...fields }) gives, without the merged object.
      const rest = fields === undefined ? '}' : JSON.stringify(fields)
      write(`${head}${new Date().toISOString()}","msg":${JSON.stringify(msg)}${rest.length > 2 ? `,${rest.slice(1)}` : '}'}`)
    }
  }
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    enabled: (lvl) => RANK[lvl] >= min,
  }
}
