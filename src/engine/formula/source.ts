/**
 * Source paths and FHIRPATH(): FHIRPath expressions (the `fhirpath` package, R4 model) evaluated
 * against the row's source record. Compile once and keep the result; a compiled formula owns a
 * PathCache so materialising many rows compiles each distinct expression once.
 */
import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { fail } from './errors.ts'
import { normalize, type Value } from './values.ts'

export type CompiledPath = (record: object | undefined) => Value

/** The parser's message when `expression` is not valid FHIRPath, else undefined. */
export function fhirPathProblem(expression: string): string | undefined {
  try {
    fhirpath.compile(expression, r4)
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

/** No result is blank, one result is the value, several are a list. */
function collapse(results: unknown[]): Value {
  if (results.length === 0) return null
  if (results.length === 1) return normalize(results[0])
  return results.map(normalize)
}

/** Compiles `expression`; invalid FHIRPath is #VALUE! with the parser's message. */
export function compilePath(expression: string): CompiledPath {
  let fn: (resource: unknown) => unknown
  try {
    fn = fhirpath.compile(expression, r4) as (resource: unknown) => unknown
  } catch (error) {
    return () => fail('VALUE', `invalid FHIRPath "${expression}": ${(error as Error).message}`)
  }
  return (record) => {
    if (record === undefined || record === null) return null
    let out: unknown
    try {
      out = fn(record)
    } catch (error) {
      return fail('VALUE', `FHIRPath "${expression}" failed: ${(error as Error).message}`)
    }
    return collapse(Array.isArray(out) ? out : [out])
  }
}

/** Compiled expressions by text, owned by one compiled formula (at most `limit` kept). */
export class PathCache {
  private readonly paths = new Map<string, CompiledPath>()
  constructor(private readonly limit = 1000) {}

  get(expression: string): CompiledPath {
    let path = this.paths.get(expression)
    if (!path) {
      path = compilePath(expression)
      if (this.paths.size >= this.limit) this.paths.delete(this.paths.keys().next().value as string)
      this.paths.set(expression, path)
    }
    return path
  }

  get size(): number {
    return this.paths.size
  }
}
