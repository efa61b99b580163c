import { z } from 'zod'
import { isValidPath } from '../lib/formats/json-path.ts'
import { ConnectorError, defineConnector } from './types.ts'

export const CONNECTOR_TYPE = 'webhook'
/** The event kinds of spec §6.2 (DATA-ENGINE: Webhook). */
export const WEBHOOK_EVENTS = [
  'data.created',
  'data.updated',
  'data.deleted',
  'sync.started',
  'sync.completed',
  'sync.failed',
] as const
export type WebhookEventKind = (typeof WEBHOOK_EVENTS)[number]
export const DEFAULT_SIGNATURE_HEADER = 'X-Signature-256'

/** The honest answer to a pull of a push source (manual sync, scheduler). */
export const PUSH_ONLY_MESSAGE =
  'Webhook sources receive their data by push at POST /api/webhooks/{endpoint}; there is nothing to synchronise on request'

/** Config of a `webhook` source (spec §2.3 Webhook; DATA-ENGINE: Webhook). */
export const WebhookConfig = z
  .object({
    endpoint: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{2,127}$/, 'must be a URL-safe slug: 3 to 128 letters, digits, "-" or "_"'),
    secret: z.string().min(1).optional(),
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1, 'must list at least one event kind'),
    verifySignature: z.boolean().default(true),
    signatureHeader: z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name')
      .default(DEFAULT_SIGNATURE_HEADER),
    dataPath: z.string().refine(isValidPath, 'must be a path like data.items or $.payload').optional(),
    batchEvents: z.boolean().default(false),
    keyField: z.string().min(1).default('id'),
    /** The sender's retry policy, kept for reference: the service answers 5xx so a sender retries. */
    retryAttempts: z.number().int().min(0).max(20).optional(),
    retryDelay: z.number().int().min(0).max(3_600_000).optional(),
  })
  .passthrough()
  .superRefine(
    (c, ctx) => {
      // verifySignature defaults to true: unless it is false, the secret is required.
      if (c.verifySignature !== false && !c.secret) {
        ctx.addIssue({ code: 'custom', path: ['secret'], message: 'required when verifySignature is true' })
      }
    },
    { when: ({ value }) => typeof value === 'object' && value !== null }, // named even beside other bad fields
  )
  .superRefine((c, ctx) => {
    if ((c as Record<string, unknown>).schedule !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['schedule'], message: 'does not apply: webhook sources receive data by push' })
    }
  })

export type WebhookConfig = z.infer<typeof WebhookConfig>

/**
 * Webhook sources are pushed to (`POST /api/webhooks/{endpoint}`, datasources.webhooks.ts); a pull
 * reads nothing, so it fails with a clear message rather than pretending to synchronise. Deliveries
 * write incrementally into the current generation, or into a snapshot's new one.
 */
export default defineConnector<WebhookConfig>({
  type: CONNECTOR_TYPE,
  configSchema: WebhookConfig,
  mode: () => 'incremental',
  // biome-ignore lint/correctness/useYield: a push source has nothing to read
  async *read() {
    throw new ConnectorError(PUSH_ONLY_MESSAGE)
  },
})
