const encoder = new TextEncoder()

/**
 * `X-Signature-256` of an outbound delivery: `sha256=` and the hex HMAC-SHA256 of the exact body
 * bytes with the subscription's secret — the scheme the inbound webhook verifies
 * (datasources.webhooks.parse.ts verifySignature), so a receiver can be tested against it.
 */
export async function signBody(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(body)))
  return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/** A new signing secret: 32 random bytes, hex (shown once, at creation). */
export function generateSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return `whsec_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`
}
