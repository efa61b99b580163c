/**
 * An outbound request the egress guard refuses (a scheme other than http(s), a private or loopback
 * address, a name that does not resolve, too many redirects, an invalid URL). The message is safe to
 * show. A sync maps it to a ConnectorError; a webhook subscription answers it as the URL's refusal.
 */
export class EgressError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'EgressError'
  }
}
