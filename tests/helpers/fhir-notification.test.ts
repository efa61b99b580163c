import { describe, expect, it } from 'vitest'
import { checkNotification } from './fhir-notification.ts'

/** The IG-shape check itself: it accepts the IG's notification and refuses each part broken. */

const PROFILE = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/backport-subscription-status-r4'

function notification(): any {
  return {
    resourceType: 'Bundle',
    type: 'history',
    timestamp: '2026-01-01T12:00:00.000Z',
    entry: [
      {
        fullUrl: 'urn:uuid:6b6c9c6e-5d3a-4b8e-9a53-2f1a2c3d4e5f',
        resource: {
          resourceType: 'Parameters',
          meta: { profile: [PROFILE] },
          parameter: [
            { name: 'subscription', valueReference: { reference: 'https://x.example/fhir/Subscription/1' } },
            { name: 'topic', valueCanonical: 'https://x.example/fhir/SubscriptionTopic/view-membership' },
            { name: 'status', valueCode: 'active' },
            { name: 'type', valueCode: 'event-notification' },
            { name: 'events-since-subscription-start', valueString: '2' },
            {
              name: 'notification-event',
              part: [
                { name: 'event-number', valueString: '2' },
                { name: 'timestamp', valueInstant: '2026-01-01T12:00:00.000Z' },
                { name: 'focus', valueReference: { reference: 'Patient/p1' } },
              ],
            },
          ],
        },
        request: { method: 'GET', url: 'https://x.example/fhir/Subscription/1/$status' },
        response: { status: '200' },
      },
      {
        fullUrl: 'https://x.example/fhir/Patient/p1',
        request: { method: 'GET', url: 'Patient/p1' },
        response: { status: '200' },
      },
    ],
  }
}

const params = (b: any) => b.entry[0].resource.parameter as any[]
const event = (b: any) => params(b).find((p) => p.name === 'notification-event').part as any[]

describe('checkNotification', () => {
  it('accepts a well-formed event notification and reads it back', () => {
    expect(checkNotification(notification(), 'id-only')).toMatchObject({
      type: 'event-notification',
      status: 'active',
      eventsSinceStart: 2,
      events: [{ number: 2, focus: 'Patient/p1' }],
    })
  })

  const broken: [string, (b: any) => void][] = [
    ['a Bundle of another type', (b) => (b.type = 'collection')],
    ['no status parameter', (b) => (b.entry[0].resource.parameter = params(b).filter((p) => p.name !== 'status'))],
    ['two type parameters', (b) => params(b).push({ name: 'type', valueCode: 'heartbeat' })],
    ['an unknown type', (b) => (params(b).find((p) => p.name === 'type').valueCode = 'event')],
    ['a numeric count (R4 needs a string)', (b) => (params(b)[4] = { name: 'events-since-subscription-start', valueInteger: 2 })],
    ['an event without its number', (b) => event(b).shift()],
    ['an event number beyond the count', (b) => (event(b)[0].valueString = '3')],
    ['an entry without request (bdl-3)', (b) => delete b.entry[1].request],
    ['an entry without response (bdl-4)', (b) => delete b.entry[1].response],
    ['a relative fullUrl', (b) => (b.entry[1].fullUrl = 'Patient/p1')],
    ['a resource in an id-only entry', (b) => (b.entry[1].resource = { resourceType: 'Patient' })],
    ['an event in a heartbeat', (b) => (params(b).find((p) => p.name === 'type').valueCode = 'heartbeat')],
    ['a subscription that is not a Subscription reference', (b) => (params(b)[0].valueReference.reference = 'Group/1')],
  ]
  for (const [what, breakIt] of broken) {
    it(`refuses ${what}`, () => {
      const b = notification()
      breakIt(b)
      expect(() => checkNotification(b, 'id-only')).toThrow()
    })
  }
})
