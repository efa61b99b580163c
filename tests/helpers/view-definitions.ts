import { createHmac } from 'node:crypto'
import { expect } from 'vitest'
import type { App } from '../../src/app.ts'
import type { TestClient } from './http.ts'

/** One row per given name of each name of a Patient: two forEach levels (the unnesting case). */
export const GIVEN_NAMES_VIEW = {
  resourceType: 'ViewDefinition',
  resource: 'Patient',
  select: [
    { column: [{ name: 'id', path: 'id' }] },
    {
      forEach: 'name',
      column: [{ name: 'family', path: 'family' }],
      select: [{ forEach: 'given', column: [{ name: 'given', path: '$this' }] }],
    },
  ],
}

/** POSTs a webhook delivery to `/api/webhooks/<endpoint>`, signed with `secret` as a sender would. */
export async function deliverSigned(app: App, endpoint: string, secret: string, body: unknown): Promise<Response> {
  const raw = JSON.stringify(body)
  const signature = `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`
  return app.request(`/api/webhooks/${endpoint}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Signature-256': signature },
    body: raw,
  })
}

/**
 * A new panel of `client`'s (tenant-a, alice) with one `fhir` source reading Patients from
 * `baseUrl`, synchronised: the starting point of the ViewDefinition panel tests.
 */
export async function panelWithFhirPatients(
  client: TestClient,
  name: string,
  baseUrl: string,
): Promise<{ panelId: number; sourceId: number }> {
  const panel = await client.post('/api/panels', { name, tenantId: 'tenant-a', userId: 'alice' })
  const source = await client.post(`/api/panels/${panel.body.id}/datasources`, {
    type: 'fhir',
    config: { baseUrl, resourceType: 'Patient' },
  })
  expect(source.body).toMatchObject({ syncStatus: 'success' })
  return { panelId: panel.body.id, sourceId: source.body.id }
}
