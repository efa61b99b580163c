import { Tokenizer, TokenParser } from '@streamparser/json'
import { FormatError } from './errors.ts'
import { parsePath } from './json-path.ts'
import { type ByteSource, decodeText } from './text.ts'

export const DEFAULT_JSON_BATCH = 1000

type Row = Record<string, unknown>

/** Non-object records are wrapped as `{ value }`, as the api connector does. */
export const toRecordData = (item: unknown): Row =>
  item && typeof item === 'object' && !Array.isArray(item) ? (item as Row) : { value: item }

/**
 * The streamparser selector for a `jsonPath` (DATA-ENGINE: Paths). Without a wildcard the path
 * names the array whose elements are the records (`$.data` → `$.data.*`); with one, every match is
 * a record (`$.groups[*].patient`). Throws FormatError for keys the selector cannot express.
 */
export function recordSelector(jsonPath: string): { selector: string; arrayAtPath: boolean } {
  const steps = parsePath(jsonPath)
  const parts = steps.map((s) => {
    if (s.kind === 'wildcard') return '*'
    if (s.kind === 'index') return String(s.index)
    if (s.key.includes('.') || s.key === '*') {
      throw new FormatError(`jsonPath "${jsonPath}": the key "${s.key}" cannot be streamed (keys with "." or "*")`)
    }
    return s.key
  })
  const arrayAtPath = !steps.some((s) => s.kind === 'wildcard')
  if (arrayAtPath) parts.push('*')
  return { selector: ['$', ...parts].join('.'), arrayAtPath }
}

/**
 * Streams JSON records in batches (DATA-ENGINE: Files, `format: "json"`): the elements of a
 * top-level array, the records at `jsonPath`, or NDJSON — several top-level values separated by
 * whitespace, each one record (a lone object is one record). `jsonPath` applies to each NDJSON
 * value too. Only the records of the current chunk are held, never the whole document (a lone
 * top-level object is the exception: it is one record). Malformed JSON is a FormatError with
 * its line and byte offset.
 */
export async function* jsonBatches(
  stream: ByteSource,
  options: { jsonPath?: string; batchSize?: number; encoding?: string; signal?: AbortSignal } = {},
): AsyncGenerator<Row[]> {
  const batchSize = options.batchSize ?? DEFAULT_JSON_BATCH
  const encoder = new TextEncoder()
  let parser: { tokenizer: Tokenizer; tokens: TokenParser } | undefined
  let ready: Row[] = []
  let bytesBefore = 0
  let linesBefore = 0
  let tokenOffset = 0
  let chunk = new Uint8Array(0)

  const lineAt = (offset: number) => {
    const within = Math.max(0, Math.min(chunk.byteLength, offset - bytesBefore))
    let n = linesBefore + 1
    for (let i = chunk.indexOf(10); i !== -1 && i < within; i = chunk.indexOf(10, i + 1)) n++
    return n
  }
  const fail = (err: unknown): never => {
    if (err instanceof FormatError) throw err
    const message = err instanceof Error ? err.message : String(err)
    if (/ended in (the )?mid/.test(message)) {
      throw new FormatError('Malformed JSON: the file ends in the middle of a value (truncated or unclosed)')
    }
    const at = /absolute position "(\d+)"/.exec(message)
    const offset = at ? Number(at[1]) : tokenOffset
    const what = /Unexpected (?:\w+ \()?("[^"]*"|\S+)/.exec(message)?.[1] ?? 'input'
    throw new FormatError(`Malformed JSON on line ${lineAt(offset)} (byte ${offset}): unexpected ${what}`)
  }

  const open = (firstChar: string) => {
    const { selector, arrayAtPath } = options.jsonPath
      ? recordSelector(options.jsonPath)
      : firstChar === '['
        ? { selector: '$.*', arrayAtPath: false }
        : { selector: '$', arrayAtPath: false }
    const tokenizer = new Tokenizer({ separator: '' })
    const tokens = new TokenParser({ paths: [selector], keepStack: false, separator: '' })
    tokenizer.onToken = (info) => {
      tokenOffset = info.offset
      tokens.write(info)
    }
    tokenizer.onEnd = () => {
      if (!tokens.isEnded) tokens.end()
    }
    tokens.onError = (err) => tokenizer.error(err)
    tokens.onValue = ({ value, parent }) => {
      if (arrayAtPath && !Array.isArray(parent)) {
        throw new FormatError(`jsonPath "${options.jsonPath}" points to an object in the file, not an array`)
      }
      ready.push(toRecordData(value))
    }
    return { tokenizer, tokens }
  }

  function* drain(all: boolean): Generator<Row[]> {
    while (ready.length >= batchSize || (all && ready.length > 0)) {
      yield ready.slice(0, batchSize)
      ready = ready.slice(batchSize)
    }
  }

  for await (const text of decodeText(stream, options)) {
    options.signal?.throwIfAborted()
    if (!parser) {
      const first = /\S/.exec(text)
      if (!first) continue
      parser = open(first[0])
    }
    chunk = encoder.encode(text)
    try {
      parser.tokenizer.write(chunk)
    } catch (err) {
      fail(err)
    }
    bytesBefore += chunk.byteLength
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) linesBefore++
    yield* drain(false)
  }
  try {
    parser?.tokenizer.end()
  } catch (err) {
    fail(err)
  }
  yield* drain(true)
}
