const PREFIX = 'enc:v1:'
const enc = new TextEncoder()
const dec = new TextDecoder()

const toB64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes))
const fromB64 = (s: string) => Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0))

/**
 * AES-256-GCM through WebCrypto for secrets at rest (DATA-ENGINE: secrets). The key is the SHA-256
 * of ENCRYPTION_KEY, so any configured string gives a full-strength key; every value gets its own
 * random 96-bit IV. Stored form: `enc:v1:<iv base64>:<ciphertext base64>`.
 */
export async function createSecretBox(passphrase: string) {
  const digest = await crypto.subtle.digest('SHA-256', enc.encode(passphrase))
  const key = await crypto.subtle.importKey('raw', digest, 'AES-GCM', false, ['encrypt', 'decrypt'])

  return {
    isEncrypted: (value: unknown): value is string => typeof value === 'string' && value.startsWith(PREFIX),

    async encrypt(plain: string): Promise<string> {
      const iv = crypto.getRandomValues(new Uint8Array(12))
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, enc.encode(plain)))
      return `${PREFIX}${toB64(iv)}:${toB64(ct)}`
    },

    /** Throws when the value was not sealed with this key (wrong ENCRYPTION_KEY, tampering). */
    async decrypt(sealed: string): Promise<string> {
      const [iv, ct] = sealed.slice(PREFIX.length).split(':')
      const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromB64(iv) }, key, fromB64(ct))
      return dec.decode(plain)
    },
  }
}

export type SecretBox = Awaited<ReturnType<typeof createSecretBox>>
