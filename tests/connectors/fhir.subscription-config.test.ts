import { describe, expect, it } from 'vitest'
import { FhirConfig } from '../../src/connectors/fhir.ts'
import {
  HEARTBEAT_PERIOD,
  MAX_NOTIFICATION_EVENTS,
  NotificationError,
  readNotification,
  subscriptionResource,
  subscriptionSpec,
  withLastUpdated,
} from '../../src/connectors/fhir-subscription-config.ts'

const status = (parameter: Record<string, unknown>[]) => ({ resourceType: 'Parameters', parameter })

describe('config.subscription of a fhir source', () => {
  const base = { baseUrl: 'https://fhir.example.org/r4', resourceType: 'Patient' }
  const issues = (subscription: unknown) => {
    const parsed = FhirConfig.safeParse({ ...base, subscription })
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
  }

  it('takes a topic with filters or classic criteria, each with a payload', () => {
    expect(issues({ topic: 'http://example.org/topic', filters: ['Patient?active=true'], payload: 'id-only' })).toEqual([])
    expect(issues({ criteria: 'Observation?code=http://loinc.org|8867-4', payload: 'full-resource' })).toEqual([])
  })

  it('names each bad field', () => {
    expect(issues({ payload: 'id-only' })).toEqual(['subscription.topic: required: a topic canonical, or classic criteria'])
    expect(issues({ topic: 'http://example.org/topic', criteria: 'Patient?x=1', payload: 'id-only' })).toEqual([
      'subscription.criteria: not with topic: give exactly one of topic and criteria',
    ])
    expect(issues({ criteria: 'Patient?x=1', filters: ['Patient?y=2'], payload: 'id-only' })).toEqual([
      'subscription.filters: only with topic (classic criteria carry their own search)',
    ])
    expect(issues({ topic: 'not a url', payload: 'everything', heartbeatSeconds: 1, extra: true }).length).toBe(4)
    // A canonical is http(s) or a URN: another scheme is no topic a FHIR server publishes.
    for (const topic of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/plain,x', 'https://has space/x']) {
      expect(issues({ topic, payload: 'id-only' }), topic).toEqual([
        'subscription.topic: must be a canonical URL (http, https or urn)',
      ])
    }
    for (const topic of ['http://hl7.org/SubscriptionTopic/admission', 'urn:uuid:1c1f1ae5-4b63-4c04-9b1b-4d6e0a3f8c11']) {
      expect(issues({ topic, payload: 'id-only' }), topic).toEqual([])
    }
  })
})

describe('the Subscription posted upstream', () => {
  it('classic criteria: full-resource asks for the resource, id-only for an empty notification', () => {
    const full = subscriptionResource(
      { criteria: 'Patient?active=true', payload: 'full-resource' },
      'https://us/n/t',
      's3',
      'why',
    )
    expect(full).toEqual({
      resourceType: 'Subscription',
      status: 'requested',
      reason: 'why',
      criteria: 'Patient?active=true',
      channel: {
        type: 'rest-hook',
        endpoint: 'https://us/n/t',
        payload: 'application/fhir+json',
        header: ['Authorization: Bearer s3'],
      },
    })
    const empty = subscriptionResource({ criteria: 'Patient?active=true', payload: 'id-only' }, 'https://us/n/t', 's3', 'why')
    expect((empty.channel as Record<string, unknown>).payload).toBeUndefined()
  })

  it('a topic: the backport profile with the heartbeat asked for (60 s by default)', () => {
    const sub = subscriptionResource({ topic: 'http://t', payload: 'id-only', heartbeatSeconds: 30 }, 'https://e', 's', 'r')
    expect((sub.channel as { extension: unknown[] }).extension).toEqual([{ url: HEARTBEAT_PERIOD, valueUnsignedInt: 30 }])
    expect(sub._criteria).toBeUndefined()
    const byDefault = subscriptionResource({ topic: 'http://t', payload: 'id-only' }, 'https://e', 's', 'r')
    expect((byDefault.channel as { extension: { valueUnsignedInt: number }[] }).extension[0].valueUnsignedInt).toBe(60)
  })

  it('its spec changes with what makes the Subscription, and only with that', () => {
    const a = subscriptionSpec('https://f/r4/', { topic: 'http://t', payload: 'id-only' })
    expect(subscriptionSpec('https://f/r4', { topic: 'http://t', payload: 'id-only' })).toBe(a)
    expect(subscriptionSpec('https://f/r4', { topic: 'http://t', payload: 'full-resource' })).not.toBe(a)
    expect(subscriptionSpec('https://f/r4', { topic: 'http://t', payload: 'id-only', filters: ['Patient?a=b'] })).not.toBe(a)
  })
})

describe('a catch-up search', () => {
  it('adds _lastUpdated=gt<since> to the search parameters, whatever their form', () => {
    const since = '2026-01-01T12:00:00.000Z'
    expect(withLastUpdated({ searchParams: undefined }, since).searchParams).toEqual({ _lastUpdated: `gt${since}` })
    expect(withLastUpdated({ searchParams: 'active=true' }, since).searchParams).toBe(
      `active=true&_lastUpdated=${encodeURIComponent(`gt${since}`)}`,
    )
    expect(withLastUpdated({ searchParams: '' }, since).searchParams).toBe(`_lastUpdated=${encodeURIComponent(`gt${since}`)}`)
    expect(withLastUpdated({ searchParams: { active: true, _lastUpdated: 'lt2030-01-01' } }, since).searchParams).toEqual({
      active: true,
      _lastUpdated: ['lt2030-01-01', `gt${since}`],
    })
  })
})

describe('reading a notification', () => {
  it('an R4 backport event notification: type, status, counters, and its changes keyed Type/id', () => {
    const n = readNotification({
      resourceType: 'Bundle',
      type: 'history',
      entry: [
        {
          resource: status([
            { name: 'status', valueCode: 'active' },
            { name: 'type', valueCode: 'event-notification' },
            { name: 'events-since-subscription-start', valueString: '12' },
            { name: 'notification-event', part: [{ name: 'event-number', valueString: '11' }] },
            { name: 'notification-event', part: [{ name: 'event-number', valueString: '12' }] },
          ]),
        },
        { fullUrl: 'https://f/r4/Patient/a', resource: { resourceType: 'Patient', id: 'a' }, request: { method: 'PUT' } },
        { fullUrl: 'https://f/r4/Patient/b/_history/3', request: { method: 'PUT', url: 'Patient/b' } },
        { request: { method: 'DELETE', url: 'Observation/c' } },
        { fullUrl: 'urn:uuid:nothing-to-key' },
      ],
    })
    expect(n).toMatchObject({ type: 'event-notification', status: 'active', eventsSinceStart: 12, eventNumbers: [11, 12] })
    expect(n.entries).toEqual([
      { key: 'Patient/a', type: 'Patient', id: 'a', deleted: false, resource: { resourceType: 'Patient', id: 'a' } },
      { key: 'Patient/b', type: 'Patient', id: 'b', deleted: false, resource: undefined },
      { key: 'Observation/c', type: 'Observation', id: 'c', deleted: true, resource: undefined },
    ])
  })

  it('an R4B SubscriptionStatus heartbeat', () => {
    const n = readNotification({
      resourceType: 'Bundle',
      entry: [
        {
          resource: { resourceType: 'SubscriptionStatus', type: 'heartbeat', status: 'error', eventsSinceSubscriptionStart: '7' },
        },
      ],
    })
    expect(n).toEqual({ type: 'heartbeat', status: 'error', eventsSinceStart: 7, eventNumbers: [], eventTimes: [], entries: [] })
  })

  it("takes the events' timestamps in UTC, and leaves out what is no instant", () => {
    const r4 = readNotification({
      resourceType: 'Bundle',
      entry: [
        {
          resource: status([
            { name: 'type', valueCode: 'event-notification' },
            {
              name: 'notification-event',
              part: [
                { name: 'event-number', valueString: '3' },
                { name: 'timestamp', valueInstant: '2026-11-28T10:00:00.5+02:00' },
              ],
            },
            {
              name: 'notification-event',
              part: [
                { name: 'event-number', valueString: '4' },
                { name: 'timestamp', valueInstant: 'yesterday' },
              ],
            },
          ]),
        },
      ],
    })
    expect(r4).toMatchObject({ eventNumbers: [3, 4], eventTimes: ['2026-11-28T08:00:00.500Z'] })
    const r4b = readNotification({
      resourceType: 'Bundle',
      entry: [
        {
          resource: {
            resourceType: 'SubscriptionStatus',
            type: 'event-notification',
            notificationEvent: [
              { eventNumber: '8', timestamp: '2026-11-28T08:00:01Z' },
              { eventNumber: '9', timestamp: '2026-02-30T08:00:01Z' },
              { eventNumber: '10', timestamp: 12 },
            ],
          },
        },
      ],
    })
    expect(r4b).toMatchObject({ eventNumbers: [8, 9, 10], eventTimes: ['2026-11-28T08:00:01.000Z'] })
  })

  it('takes a resource as the change only with a valid type and id of its own; else reads it by its address', () => {
    const n = readNotification({
      resourceType: 'Bundle',
      entry: [
        { resource: status([{ name: 'type', valueCode: 'event-notification' }]) },
        // No id of its own: the address names it, the server's copy is read.
        { fullUrl: 'https://f/r4/Patient/p1', resource: { resourceType: 'Observation', status: 'final' } },
        { fullUrl: 'https://f/r4/Patient/p2', resource: { hello: 'not fhir' } },
        { fullUrl: 'https://f/r4/Patient/p3', resource: { resourceType: 'x/../y', id: 'p3' } },
        // Its own type and id name it, whatever the address says.
        { fullUrl: 'https://f/r4/Patient/p4', resource: { resourceType: 'Patient', id: 'p5' } },
        // Ids that would address something else, or are too long, name nothing.
        { fullUrl: 'https://f/r4/Patient/..', request: { method: 'PUT' } },
        { resource: { resourceType: 'Patient', id: '../../etc/passwd' } },
        { resource: { resourceType: 'Patient', id: 'x'.repeat(65) } },
        // A method that is no text is not a DELETE.
        { fullUrl: 'https://f/r4/Patient/p6', request: { method: 123 } },
      ],
    })
    expect(n.entries).toEqual([
      { key: 'Patient/p1', type: 'Patient', id: 'p1', deleted: false, resource: undefined },
      { key: 'Patient/p2', type: 'Patient', id: 'p2', deleted: false, resource: undefined },
      { key: 'Patient/p3', type: 'Patient', id: 'p3', deleted: false, resource: undefined },
      { key: 'Patient/p5', type: 'Patient', id: 'p5', deleted: false, resource: { resourceType: 'Patient', id: 'p5' } },
      { key: 'Patient/p6', type: 'Patient', id: 'p6', deleted: false, resource: undefined },
    ])
  })

  it(`refuses more than ${MAX_NOTIFICATION_EVENTS} events in one notification`, () => {
    const events = Array.from({ length: MAX_NOTIFICATION_EVENTS + 1 }, (_, i) => ({ eventNumber: String(i + 1) }))
    const doc = (n: number) => ({
      resourceType: 'Bundle',
      entry: [
        { resource: { resourceType: 'SubscriptionStatus', type: 'event-notification', notificationEvent: events.slice(0, n) } },
      ],
    })
    expect(readNotification(doc(MAX_NOTIFICATION_EVENTS)).eventNumbers).toHaveLength(MAX_NOTIFICATION_EVENTS)
    expect(() => readNotification(doc(MAX_NOTIFICATION_EVENTS + 1))).toThrow(`at most ${MAX_NOTIFICATION_EVENTS} events`)
  })

  it('refuses what is not a notification', () => {
    expect(() => readNotification({ resourceType: 'Patient' })).toThrow(NotificationError)
    expect(() => readNotification({ resourceType: 'Bundle', entry: [] })).toThrow('no SubscriptionStatus')
    expect(() =>
      readNotification({ resourceType: 'Bundle', entry: [{ resource: status([{ name: 'type', valueCode: 'party' }]) }] }),
    ).toThrow("Unknown notification type 'party'")
  })
})
