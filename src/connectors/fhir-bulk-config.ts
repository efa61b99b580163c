import { z } from 'zod'
import { isFhirId, isFhirInstant, RESOURCE_TYPE } from './fhir-types.ts'
import type { createAuthenticator } from './shared/auth.ts'

/**
 * The configuration of a `fhir` source in bulk mode and what its export is asked with
 * (docs/connectors-fhir.md): `config.bulk`, the stored cursor of `since: "auto"`, the kick-off URL,
 * and the shape of the completion manifest. The export itself is fhir-bulk.ts.
 */

const FHIR_ID_MESSAGE = 'must be a FHIR id (letters, digits, "-" and ".", at most 64, not dots only)'

export const resourceTypeName = z.string().regex(RESOURCE_TYPE, 'must be a FHIR resource type such as "Patient"')

/** A bulk source's `timeout` when left out: one hour, from kick-off to the last byte. */
export const DEFAULT_EXPORT_TIMEOUT_MS = 3_600_000
/** The most a bulk source's `timeout` allows: a day. */
export const MAX_EXPORT_TIMEOUT_MS = 86_400_000

/**
 * `config.bulk` of a `fhir` source in bulk mode (docs/connectors-fhir.md). Strict like
 * `config.subscription`: the block is the connector's own (the service adds nothing to it), so an
 * unknown field is a typo (`type` for `types` would export every type) and a 400 naming it.
 */
export const BulkConfig = z
  .object({
    level: z.enum(['system', 'patient', 'group']),
    groupId: z.string().refine(isFhirId, FHIR_ID_MESSAGE).optional(),
    types: z.array(resourceTypeName).min(1).max(200).optional(),
    /** `_typeFilter` values, each a search such as `Observation?category=vital-signs`, sent one per parameter. */
    typeFilters: z
      .array(z.string().regex(/^[A-Z][A-Za-z]{1,63}\?.+$/, 'must be a search such as "Observation?status=final"'))
      .min(1)
      .max(100)
      .optional(),
    /** `auto`: the next sync asks for changes since the last manifest's `transactionTime`. */
    since: z.enum(['auto', 'none']),
  })
  .strict()
  .superRefine(
    (b, ctx) => {
      if (b.level === 'group' && !b.groupId)
        ctx.addIssue({ code: 'custom', path: ['groupId'], message: 'required for level group' })
      if (b.level !== 'group' && b.groupId) {
        ctx.addIssue({ code: 'custom', path: ['groupId'], message: 'only for level group' })
      }
    },
    { when: ({ value }) => typeof value === 'object' && value !== null },
  )

export type BulkConfig = z.infer<typeof BulkConfig>

/** What the bulk read needs of the source's config. */
export interface BulkSourceConfig {
  baseUrl: string
  bulk: BulkConfig
  /**
   * The whole export's limit in ms, kick-off to last byte, polls and the waits between the
   * invocations of a resumed sync included (fhir.ts: 1 h when left out, at most 24 h). Each request
   * gets at most 5 min of it.
   */
  timeout: number
  retryAttempts: number
  retryDelay: number
  authentication?: Parameters<typeof createAuthenticator>[0]
  lastSyncValue?: unknown
}

/** One file of a manifest. */
export interface ManifestFile {
  type?: string
  url: string
}

const ManifestFileSchema = z.object({ type: z.string().optional(), url: z.string().min(1) }).passthrough()
/** The completion manifest of an export. */
export const Manifest = z
  .object({
    /** Stored as the cursor and sent back as `_since`: it must be a FHIR instant. */
    transactionTime: z.string().refine(isFhirInstant, {
      error: (issue) =>
        `${JSON.stringify(String(issue.input).slice(0, 40))} is not a FHIR instant (such as 2026-01-31T12:00:00Z, with a real date and a zone)`,
    }),
    requiresAccessToken: z.boolean().optional(),
    output: z.array(ManifestFileSchema),
    deleted: z.array(ManifestFileSchema).optional(),
    error: z.array(ManifestFileSchema).optional(),
  })
  .passthrough()
export type Manifest = z.infer<typeof Manifest>

/**
 * What an export saves between the invocations of its sync (ConnectorContext.resume,
 * docs/connectors-fhir.md "Exports across invocations"): the job, when it was kicked off (the
 * source's `timeout` counts from there, across invocations), the `_since` it was asked with, when
 * it may be polled again, and once complete its manifest and how far its files are committed
 * (`part`: the index in the output files then the deleted files; `line`: lines of it done).
 */
export const BulkProgress = z.object({
  statusUrl: z.string().url(),
  startedAt: z.number(),
  since: z.string().optional(),
  pollAt: z.number().optional(),
  manifest: Manifest.optional(),
  at: z.object({ part: z.number().int().min(0), line: z.number().int().min(0) }).optional(),
})
export type BulkProgress = z.infer<typeof BulkProgress>

/**
 * The stored cursor of a `since: "auto"` source: the last manifest's `transactionTime`. One that is
 * not a FHIR instant (stored before manifests were checked, or sent in a `PUT`) is no cursor: the
 * sync is a whole export, which stores a good one.
 */
export const bulkCursor = (config: Pick<BulkSourceConfig, 'bulk' | 'lastSyncValue'>): string | undefined =>
  config.bulk.since === 'auto' && typeof config.lastSyncValue === 'string' && isFhirInstant(config.lastSyncValue)
    ? config.lastSyncValue
    : undefined

/** The kick-off URL: level, `_type`, `_typeFilter` (one per filter) and `_since`. */
export function kickOffUrl(config: Pick<BulkSourceConfig, 'baseUrl' | 'bulk'>, since?: string): URL {
  const base = config.baseUrl.replace(/\/+$/, '')
  const { bulk } = config
  const path =
    bulk.level === 'system' ? '$export' : bulk.level === 'patient' ? 'Patient/$export' : `Group/${bulk.groupId}/$export`
  const url = new URL(`${base}/${path}`)
  if (bulk.types) url.searchParams.set('_type', bulk.types.join(','))
  for (const filter of bulk.typeFilters ?? []) url.searchParams.append('_typeFilter', filter)
  if (since !== undefined) url.searchParams.set('_since', since)
  return url
}
