/**
 * The view-membership topic of the FHIR face (docs/fhir.md "View membership as a topic"), in the
 * terms of the Subscriptions R5 Backport IG (STU 1.1, R4 profiles): its canonical, its filters and
 * the IG's extension and profile URLs.
 */

export const TOPIC_PATH = '/SubscriptionTopic/view-membership'

/** The topic's canonical URL under the face's base (`…/fhir`). */
export const topicCanonical = (base: string) => `${base}${TOPIC_PATH}`

/** The face's base of a canonical the service accepted (it ends in TOPIC_PATH). */
export const baseOfTopic = (topic: string) => topic.slice(0, topic.length - TOPIC_PATH.length)

/** The membership moves a subscription may ask for, and the change-feed events they are. */
export const MEMBERSHIP_EVENTS = ['entered', 'left', 'updated'] as const
export type MembershipEvent = (typeof MEMBERSHIP_EVENTS)[number]
export const eventTypeOf = (e: MembershipEvent) => `row.${e}`

const IG = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition'

export const BACKPORT = {
  subscriptionProfile: `${IG}/backport-subscription`,
  statusProfile: `${IG}/backport-subscription-status-r4`,
  notificationProfile: `${IG}/backport-subscription-notification-r4`,
  filterCriteria: `${IG}/backport-filter-criteria`,
  payloadContent: `${IG}/backport-payload-content`,
  heartbeatPeriod: `${IG}/backport-heartbeat-period`,
  timeout: `${IG}/backport-timeout`,
  maxCount: `${IG}/backport-max-count`,
  topicCanonical: `${IG}/capabilitystatement-subscriptiontopic-canonical`,
} as const

/** The code system naming a membership move in a notification's `additional-context`. */
export const MEMBERSHIP_EVENT_SYSTEM = 'urn:panels:fhir:membership-event'

/** The media type of FHIR R4 JSON: notifications are sent as it. */
export const FHIR_JSON_TYPE = 'application/fhir+json'

/** A header field name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** `Name: value` as [name, value], or undefined. */
export function splitHeader(h: string): [string, string] | undefined {
  const at = h.indexOf(':')
  if (at <= 0) return undefined
  const name = h.slice(0, at).trim()
  const value = h.slice(at + 1).trim()
  if (!HEADER_NAME.test(name) || /[\r\n]/.test(value) || value.length > 4096) return undefined
  return [name, value]
}
