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

/** Structured JSON logs, one line per event, written through `write` (console.log by default). */
export function createLogger(level: LogLevel, write: (line: string) => void = console.log): Logger {
  const min = RANK[level]
  const emit = (lvl: Exclude<LogLevel, 'silent'>) => (msg: string, fields?: LogFields) => {
    if (RANK[lvl] < min) return
    write(JSON.stringify({ level: lvl, time: new Date().toISOString(), msg, ...fields }))
  }
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    enabled: (lvl) => RANK[lvl] >= min,
  }
}
