/**
 * The digest of a generation's rows (docs/live.md "The write path"): an order-independent 64-bit
 * sum of a 64-bit hash of each row's key, cells and errors, with the row count. Two generations
 * with equal digests hold the same rows (a chance collision is about 2^-64), so a full sync of
 * unchanged data skips comparing the generations row by row. Cheap: one pass over texts the write
 * builds anyway.
 */
export class GenerationDigest {
  private lo = 0
  private hi = 0
  private rows = 0

  /** Adds one stored row. */
  add(key: string, cells: string, errors: string) {
    const [h1, h2] = hashLanes(key, cells, errors)
    this.lo = (this.lo + h1) >>> 0
    this.hi = (this.hi + h2) >>> 0
    this.rows++
  }

  /** The digest as text, e.g. `100000:1f2e…`. */
  toString(): string {
    return `${this.rows}:${this.hi.toString(16).padStart(8, '0')}${this.lo.toString(16).padStart(8, '0')}`
  }
}

/**
 * cyrb53's two 32-bit lanes (unsigned) over the texts in turn, each followed by a separator (so
 * `ab`,`c` and `a`,`bc` differ): a fast, well-mixed 64-bit hash.
 */
export function hashLanes(...texts: string[]): [number, number] {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (const text of texts) {
    h1 = Math.imul(h1, 2654435761)
    h2 = Math.imul(h2 ^ 0x9e3779b9, 1597334677)
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      h1 = Math.imul(h1 ^ c, 2654435761)
      h2 = Math.imul(h2 ^ c, 1597334677)
    }
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return [h1 >>> 0, h2 >>> 0]
}

/** cyrb53 of a text as hex: a short, stable name (a view's row query: membership.ts). */
export function hashText(text: string): string {
  const [h1, h2] = hashLanes(text)
  return (4294967296 * (2097151 & h2) + h1).toString(16)
}
