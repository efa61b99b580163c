import { describe, expect, it } from 'vitest'
import { FhirConfig } from '../../src/connectors/fhir.ts'
import {
  HEARTBEAT_PERIOD,
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
    expect(n).toEqual({ type: 'heartbeat', status: 'error', eventsSinceStart: 7, eventNumbers: [], entries: [] })
  })

  it('refuses what is not a notification', () => {
    expect(() => readNotification({ resourceType: 'Patient' })).toThrow(NotificationError)
    expect(() => readNotification({ resourceType: 'Bundle', entry: [] })).toThrow('no SubscriptionStatus')
    expect(() =>
      readNotification({ resourceType: 'Bundle', entry: [{ resource: status([{ name: 'type', valueCode: 'party' }]) }] }),
    ).toThrow("Unknown notification type 'party'")
  })
})
