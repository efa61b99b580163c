/**
 * The JSONPath subset of DATA-ENGINE "Paths": `$.a.b`, `a.b`, `a[0].b`, `a[*].b` (and `['a b']`
 * for keys that are not identifiers). Parsed into steps and walked; never evaluated as code.
 */

export type PathStep = { kind: 'key'; key: string } | { kind: 'index'; index: number } | { kind: 'wildcard' }

export class PathSyntaxError extends Error {
  constructor(path: string, reason: string) {
    super(`Invalid path "${path}": ${reason}`)
    this.name = 'PathSyntaxError'
  }
}

const IDENT = /^[^.[\]'"\s*]+/

/** Parses a path into steps; throws PathSyntaxError. `$` and `` (empty) mean the whole document. */
export function parsePath(path: string): PathStep[] {
  let rest = path.trim()
  if (rest === '$' || rest.startsWith('$.') || rest.startsWith('$[')) rest = rest.slice(1)
  const steps: PathStep[] = []
  let first = true
  while (rest.length > 0) {
    if (rest.startsWith('[')) {
      const m = /^\[(?:(\d+)|(\*)|'([^']*)'|"([^"]*)")\]/.exec(rest)
      if (!m) throw new PathSyntaxError(path, `unexpected "${rest.slice(0, 10)}"`)
      if (m[1] !== undefined) steps.push({ kind: 'index', index: Number(m[1]) })
      else if (m[2] !== undefined) steps.push({ kind: 'wildcard' })
      else steps.push({ kind: 'key', key: m[3] ?? m[4] })
      rest = rest.slice(m[0].length)
    } else {
      if (rest.startsWith('.')) rest = rest.slice(1)
      else if (!first) throw new PathSyntaxError(path, `expected "." or "[" before "${rest.slice(0, 10)}"`)
      if (rest.startsWith('*')) {
        steps.push({ kind: 'wildcard' })
        rest = rest.slice(1)
      } else {
        const m = IDENT.exec(rest)
        if (!m) throw new PathSyntaxError(path, `expected a field name at "${rest.slice(0, 10)}"`)
        steps.push({ kind: 'key', key: m[0] })
        rest = rest.slice(m[0].length)
      }
    }
    first = false
  }
  return steps
}

export function isValidPath(path: string): boolean {
  try {
    parsePath(path)
    return true
  } catch {
    return false
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The value at `path` in `doc`. Without a wildcard: the single value (undefined when missing).
 * With `[*]`/`.*`: an array of every match (missing branches skipped), flattened one level per
 * wildcard, as JSONPath does.
 */
export function evaluatePath(doc: unknown, path: string | PathStep[]): unknown {
  const steps = typeof path === 'string' ? parsePath(path) : path
  let current: unknown[] = [doc]
  let multi = false
  for (const step of steps) {
    const next: unknown[] = []
    for (const value of current) {
      if (step.kind === 'wildcard') {
        if (Array.isArray(value)) next.push(...value)
        else if (isObject(value)) next.push(...Object.values(value))
      } else if (step.kind === 'index') {
        if (Array.isArray(value) && step.index < value.length) next.push(value[step.index])
      } else if (isObject(value) && Object.hasOwn(value, step.key)) {
        next.push(value[step.key])
      }
    }
    if (step.kind === 'wildcard') multi = true
    current = next
  }
  return multi ? current : current[0]
}
