import { z } from 'zod'
import { DEFAULT_RETRY_ATTEMPTS, DEFAULT_RETRY_DELAY_MS, MAX_RETRY_ATTEMPTS, MAX_RETRY_WAIT_MS } from './retry.ts'

/**
 * Config fields shared by the HTTP connectors (`api`, `fhir`). `schedule` and `timezone` are
 * checked for every source type by the data source service.
 */

export const DEFAULT_HTTP_TIMEOUT_MS = 30_000
export const MAX_HTTP_TIMEOUT_MS = 300_000

export const httpUrl = (v: string) => {
  try {
    return ['http:', 'https:'].includes(new URL(v).protocol)
  } catch {
    return false
  }
}

/**
 * False for a URL carrying `user:password@`: fetch refuses to send it, and the password would be
 * stored and answered in clear. Credentials go in `authentication`.
 */
export const withoutCredentials = (v: string) => {
  try {
    const url = new URL(v)
    return url.username === '' && url.password === ''
  } catch {
    return true
  }
}
export const NO_CREDENTIALS_MESSAGE = 'must not contain a user name or password; put credentials in authentication'

export const requestFields = {
  timeout: z.number().int().min(1).max(MAX_HTTP_TIMEOUT_MS).default(DEFAULT_HTTP_TIMEOUT_MS),
  retryAttempts: z.number().int().min(0).max(MAX_RETRY_ATTEMPTS).default(DEFAULT_RETRY_ATTEMPTS),
  retryDelay: z.number().int().min(0).max(MAX_RETRY_WAIT_MS).default(DEFAULT_RETRY_DELAY_MS),
}

/** A user cap on pages read; reaching it with more to read is reported as truncation. */
export const maxPagesField = z.number().int().min(1).max(1_000_000).optional()
