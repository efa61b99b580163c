import type { ConnectorContext } from '../types.ts'
import { type Authentication, createAuthenticator } from './auth.ts'
import { createHttpClient, type HttpClient, type HttpClientOptions } from './request.ts'

/** The request fields every HTTP source shares (`requestFields`) and its optional `authentication`. */
export interface HttpSourceConfig {
  timeout: number
  retryAttempts: number
  retryDelay: number
  authentication?: Authentication
}

/** The HTTP client of one sync of an HTTP source: its credentials, retries, time limit and byte budget. */
export function sourceClient(
  ctx: ConnectorContext,
  config: HttpSourceConfig,
  label: string,
  describeFailure?: HttpClientOptions['describeFailure'],
): HttpClient {
  const limits = { retryAttempts: config.retryAttempts, retryDelayMs: config.retryDelay, timeoutMs: config.timeout }
  const auth = createAuthenticator(config.authentication, ctx, limits)
  return createHttpClient(ctx, { label, ...limits, auth, describeFailure })
}
