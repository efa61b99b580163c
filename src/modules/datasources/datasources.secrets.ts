import { invalid } from '../../errors.ts'
import type { SecretBox } from '../../lib/secrets.ts'

/** What responses and change diffs show in place of a secret (DATA-ENGINE: secrets). */
export const SECRET_MASK = '<SECRET>'

/** Config keys (any depth, case-insensitive) whose values are secrets. */
const SECRET_KEYS = new Set(['password', 'token', 'apikey', 'clientsecret', 'secret', 'authtoken'])
/** Header names (inside a `headers` map) whose values are credentials. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'cookie'])
/** `scheme://user:password@host…`: the password is everything up to the last `@`. */
const URL_CREDENTIALS = /^([a-z][\w+.-]*:\/\/[^:@/]*:)(.*)(@[^@]*)$/i
/** Credentials in a connection string's query (`?password=…`, `?authToken=…` of libSQL). */
const QUERY_CREDENTIALS = /([?&](?:password|authtoken|sslpassword|token)=)([^&#]*)/gi

type Kind = 'secret' | 'connectionString'
type Path = string[]

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function kindOf(key: string, parent: string | undefined): Kind | undefined {
  const k = key.toLowerCase()
  if (k === 'connectionstring') return 'connectionString'
  if (SECRET_KEYS.has(k)) return 'secret'
  if (parent?.toLowerCase() === 'headers' && SECRET_HEADERS.has(k)) return 'secret'
  return undefined
}

/** Rebuilds a config, passing every secret leaf (string or number) through `leaf`. */
async function walk(
  value: unknown,
  leaf: (v: string, path: Path, kind: Kind) => Promise<unknown>,
  path: Path = [],
): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((v, i) => walk(v, leaf, [...path, String(i)])))
  if (!isObject(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    const kind = kindOf(key, path.at(-1))
    const secretLeaf = kind !== undefined && (typeof v === 'string' || typeof v === 'number')
    out[key] = secretLeaf ? await leaf(String(v), [...path, key], kind) : await walk(v, leaf, [...path, key])
  }
  return out
}

const at = (value: unknown, path: Path): unknown =>
  path.reduce<unknown>((v, k) => (isObject(v) || Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined), value)

/** A connection string split at its query: `[base, query]` (query with its `?`, or ''). */
const splitQuery = (url: string): [string, string] => {
  const q = url.indexOf('?')
  return q === -1 ? [url, ''] : [url.slice(0, q), url.slice(q)]
}

/**
 * The credentials of a connection string by place (`userinfo`, or the query parameter's name), or
 * undefined when it has none.
 */
function passwordsOf(url: string): Map<string, string> | undefined {
  const found = new Map<string, string>()
  const [base, query] = splitQuery(url)
  for (const m of query.matchAll(QUERY_CREDENTIALS)) found.set(m[1].slice(1, -1).toLowerCase(), m[2])
  const userinfo = URL_CREDENTIALS.exec(base)?.[2]
  if (userinfo !== undefined) found.set('userinfo', userinfo)
  return found.size > 0 ? found : undefined
}

/** The connection string with each credential replaced by `next(place, value)`. */
function withPasswords(url: string, next: (place: string, value: string) => string): string {
  const [base, query] = splitQuery(url)
  return (
    base.replace(URL_CREDENTIALS, (_m, head, p, tail) => head + next('userinfo', p) + tail) +
    query.replace(QUERY_CREDENTIALS, (_m, head: string, v: string) => head + next(head.slice(1, -1).toLowerCase(), v))
  )
}

/**
 * The config to store: every secret encrypted (`enc:v1:…`), a connection string with a password
 * encrypted as a whole. A value of "<SECRET>" (or a connection-string password of "<SECRET>")
 * keeps the secret stored at the same path in `stored`; with none there, it is a 400.
 */
export async function sealConfig(box: SecretBox, config: Record<string, unknown>, stored?: Record<string, unknown>) {
  const missing: Path[] = []
  const sealed = await walk(config, async (value, path, kind) => {
    const previous = at(stored, path)
    if (value === SECRET_MASK) {
      if (typeof previous === 'string') return previous
      missing.push(path)
      return value
    }
    if (kind === 'secret') return box.encrypt(value)
    let plain = value
    const given = passwordsOf(value)
    if (given && [...given.values()].includes(SECRET_MASK)) {
      const old = typeof previous === 'string' ? await openValue(box, previous) : undefined
      const oldPasswords = old === undefined ? undefined : passwordsOf(old)
      const lost = [...given].some(([place, v]) => v === SECRET_MASK && oldPasswords?.get(place) === undefined)
      if (lost) {
        missing.push(path)
        return value
      }
      plain = withPasswords(value, (place, v) => (v === SECRET_MASK ? oldPasswords!.get(place)! : v))
    }
    return passwordsOf(plain) === undefined ? plain : box.encrypt(plain)
  })
  if (missing.length > 0) {
    throw invalid(
      missing.map((p) => ({
        path: ['config', ...p].join('.'),
        message: `"${SECRET_MASK}" keeps a stored secret, but none is stored here`,
      })),
    )
  }
  return sealed as Record<string, unknown>
}

async function openValue(box: SecretBox, value: string): Promise<string> {
  return box.isEncrypted(value) ? box.decrypt(value) : value
}

/** The config as answered: secrets as "<SECRET>", a connection string with its password masked. */
export async function maskConfig(box: SecretBox, stored: Record<string, unknown>) {
  return (await walk(stored, async (value, _path, kind) => {
    if (kind === 'secret') return SECRET_MASK
    let plain: string
    try {
      plain = await openValue(box, value)
    } catch {
      return SECRET_MASK
    }
    return passwordsOf(plain) === undefined ? plain : withPasswords(plain, () => SECRET_MASK)
  })) as Record<string, unknown>
}

/** Thrown when a stored secret cannot be decrypted (ENCRYPTION_KEY changed, tampering). */
export class SecretUnavailableError extends Error {
  constructor(readonly path: string) {
    super(`The stored secret at config.${path} cannot be decrypted (was ENCRYPTION_KEY changed?)`)
    this.name = 'SecretUnavailableError'
  }
}

/** The plain config for a connector; only the sync calls this, and never logs the result. */
export async function unsealConfig(box: SecretBox, stored: Record<string, unknown>) {
  return (await walk(stored, async (value, path) => {
    try {
      return await openValue(box, value)
    } catch {
      throw new SecretUnavailableError(path.join('.'))
    }
  })) as Record<string, unknown>
}
