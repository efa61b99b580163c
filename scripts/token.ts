/**
 * `npm run -s token -- --tenant T --user U [--role admin] [--ttl 24h]`: prints one HS256 access token.
 *
 * The secret is JWT_SECRET from the environment; without it, the development secret `npm start` uses
 * (generated once into ./data/.dev-secrets.json, relative to the working directory). Only the token is
 * written to stdout, so `TOKEN=$(npm run -s token -- --tenant t1 --user u1)` works.
 */
import { parseArgs } from 'node:util'
import { ConfigError, parseConfig } from '../src/config.ts'
import { signToken } from '../src/lib/tokens.ts'
import { withDevSecrets } from '../src/runtime/node-primitives.ts'

const USAGE = `Usage: npm run -s token -- --tenant <tenantId> --user <userId> [--role <role>] [--groups a,b] [--ttl <duration>]

  --tenant, -t   tenantId claim (required)
  --user, -u     userId and sub claims (required)
  --role, -r     optional role claim; "admin" may act for any user of its tenant
  --groups, -g   optional groups claim, comma-separated (published views shared with userGroups)
  --ttl          lifetime: <n>s, <n>m, <n>h or <n>d (e.g. 90s, 15m, 24h, 7d); default 24h

Signs with JWT_SECRET from the environment, else with the development secret of \`npm start\`
(./data/.dev-secrets.json).`

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 }

/** `90s` / `15m` / `24h` / `7d` → seconds; undefined when malformed or not positive. */
function parseTtl(text: string): number | undefined {
  const match = /^(\d+)([smhd])$/.exec(text.trim())
  if (!match) return undefined
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2]]
  return seconds > 0 && Number.isSafeInteger(seconds) ? seconds : undefined
}

function fail(message: string): never {
  console.error(`token: ${message}\n\n${USAGE}`)
  process.exit(1)
}

function readArgs() {
  try {
    return parseArgs({
      options: {
        tenant: { type: 'string', short: 't' },
        user: { type: 'string', short: 'u' },
        role: { type: 'string', short: 'r' },
        groups: { type: 'string', short: 'g' },
        ttl: { type: 'string', default: '24h' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (err) {
    fail((err as Error).message)
  }
}

function secretFromEnvironment(): string {
  if (process.env.JWT_SECRET) return process.env.JWT_SECRET
  try {
    const secret = withDevSecrets(parseConfig(process.env)).jwtSecret
    if (!secret) throw new ConfigError([{ variable: 'JWT_SECRET', message: 'required' }])
    return secret
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(1)
    }
    throw err
  }
}

const args = readArgs()
if (args.help) {
  console.log(USAGE)
  process.exit(0)
}
const tenantId = args.tenant?.trim()
const userId = args.user?.trim()
if (!tenantId) fail('--tenant is required')
if (!userId) fail('--user is required')
if (args.role !== undefined && !args.role.trim()) fail('--role must not be empty')
const ttlSeconds = parseTtl(args.ttl ?? '24h')
if (ttlSeconds === undefined) fail(`--ttl "${args.ttl}" is not a duration like 90s, 15m, 24h or 7d`)

const groups = (args.groups ?? '')
  .split(',')
  .map((g) => g.trim())
  .filter(Boolean)
if (args.groups !== undefined && groups.length === 0) fail('--groups must name at least one group')

const token = await signToken(secretFromEnvironment(), { tenantId, userId, role: args.role?.trim(), groups, ttlSeconds })
console.log(token)
