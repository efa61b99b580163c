import type { fhirTopicSubscriptions } from '../../db/schema-live.ts'
import { BACKPORT } from '../fhir-topic/fhir.topic.ts'
import type { SubscriptionRow } from '../subscriptions/subscriptions.schemas.ts'

/** Where the signing secret travels in the answer to the create (docs/fhir.md "Signatures"). */
export const SIGNING_SECRET_EXTENSION = 'urn:panels:fhir:signing-secret'

export type FhirSubscriptionResource = ReturnType<typeof toFhirSubscription>

/**
 * A stored topic subscription as an R4 Subscription of the backport profile. channel.header is
 * never answered (it may hold the receiver's credentials); the signing secret only once, on create.
 */
export function toFhirSubscription(
  row: SubscriptionRow,
  fhir: typeof fhirTopicSubscriptions.$inferSelect,
  once: { secret?: string; requested?: boolean } = {},
) {
  const reason = typeof fhir.resource.reason === 'string' ? fhir.resource.reason : (row.description ?? '')
  const channelExtension: Record<string, unknown>[] = []
  if (fhir.heartbeatSeconds !== null)
    channelExtension.push({ url: BACKPORT.heartbeatPeriod, valueUnsignedInt: fhir.heartbeatSeconds })
  if (fhir.timeoutSeconds !== null) channelExtension.push({ url: BACKPORT.timeout, valueUnsignedInt: fhir.timeoutSeconds })
  // The create answers `requested` even when a fast handshake already made it active.
  const status = once.requested ? 'requested' : fhir.status
  return {
    resourceType: 'Subscription' as const,
    id: String(row.id),
    meta: { lastUpdated: fhir.updatedAt, profile: [BACKPORT.subscriptionProfile] },
    ...(once.secret ? { extension: [{ url: SIGNING_SECRET_EXTENSION, valueString: once.secret }] } : {}),
    status,
    reason,
    criteria: fhir.topic,
    _criteria: { extension: fhir.filters.map((f) => ({ url: BACKPORT.filterCriteria, valueString: f })) },
    ...(status === 'error' && fhir.error ? { error: fhir.error } : {}),
    channel: {
      ...(channelExtension.length > 0 ? { extension: channelExtension } : {}),
      type: 'rest-hook',
      endpoint: row.url,
      payload: 'application/fhir+json',
      _payload: { extension: [{ url: BACKPORT.payloadContent, valueCode: fhir.payload }] },
    },
  }
}
