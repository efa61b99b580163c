import { createHash } from 'node:crypto'

/**
 * SHA-256 hex of a string, synchronously (node:crypto: Node, Deno, and Workers with nodejs_compat).
 * Record keys hash every keyless row (DATA-ENGINE: Records).
 */
export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex')
