import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { MedplumClient } from '@medplum/core'
import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenFor } from '../helpers/auth.ts'
import { type RowsWorld, rowsWorld } from '../modules/rows/fixtures.ts'

/**
 * Patient lists read by FHIR clients we did not write (issue 24 point 5): Medplum's MedplumClient
 * pointed at the app's /fhir face over real HTTP on 127.0.0.1 reads a Group, searches Groups and
 * pages members with $getpage, and the fhirpath package evaluates what it got. Node only: the app
 * is served in-process by @hono/node-server.
 */

const PATIENTS = Array.from({ length: 7 }, (_, i) => ({ id: `Patient/m${i + 1}`, name: `Patient ${i + 1}`, age: 30 + i }))

let w: RowsWorld
let server: ReturnType<typeof serve>
let medplum: MedplumClient
let viewId: number

beforeAll(async () => {
  w = await rowsWorld(PATIENTS)
  const view = await w.alice.post('/api/views', {
    name: 'Diabetes follow-up',
    panelId: w.panelId,
    config: { columns: ['Name', 'Age'] },
    sorting: [{ columnTitle: 'Age', direction: 'desc' }],
  })
  viewId = view.body.id
  await w.alice.post('/api/views', { name: 'Cardiology review', panelId: w.panelId })
  server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: w.t.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  medplum = new MedplumClient({ baseUrl: `http://127.0.0.1:${port}/`, fhirUrlPath: 'fhir', cacheTime: 0 })
  medplum.setAccessToken(await tokenFor('tenant-a', 'alice'))
})

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  await w?.server.close()
})

const evaluate = (resource: unknown, expression: string) => fhirpath.evaluate(resource as object, expression, undefined, r4)

describe('MedplumClient over /fhir', () => {
  it('reads a Group with its members', async () => {
    const group = await medplum.readResource('Group', String(viewId))
    expect(group).toMatchObject({ resourceType: 'Group', id: String(viewId), type: 'person', actual: true, quantity: 7 })
    // Oldest first, as the view sorts.
    expect(evaluate(group, 'Group.member.entity.reference')).toEqual(Array.from({ length: 7 }, (_, i) => `Patient/m${7 - i}`))
    expect(evaluate(group, "Group.type = 'person' and Group.actual and Group.quantity = Group.member.count()")).toEqual([true])
  })

  it('searches Groups by name and in summary form', async () => {
    const bundle = await medplum.search('Group', { name: 'diab', _summary: 'true' })
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 })
    expect(evaluate(bundle, 'Bundle.entry.resource.name')).toEqual(['Diabetes follow-up'])
    expect(evaluate(bundle, 'Bundle.entry.resource.member.exists()')).toEqual([false])
    const all = await medplum.searchResources('Group', { _count: '1' })
    expect(all.map((g) => g.name)).toEqual(['Diabetes follow-up'])
    expect(evaluate(all.bundle, "Bundle.link.where(relation = 'next').url.contains('_offset=1')")).toEqual([true])
  })

  it('pages the members with $getpage (GET, following next links, and POST Parameters)', async () => {
    const seen: string[] = []
    let url: string | undefined = `${medplum.fhirUrl('Group', String(viewId), '$getpage').toString()}?offset=0&count=3`
    let pages = 0
    while (url) {
      const page: unknown = await medplum.get(url)
      pages++
      seen.push(...(evaluate(page, 'Group.member.entity.reference') as string[]))
      url = (evaluate(page, "Group.extension.where(url.endsWith('/members-next-page')).value") as string[])[0]
    }
    expect(pages).toBe(3)
    expect(seen).toEqual(Array.from({ length: 7 }, (_, i) => `Patient/m${7 - i}`))
    const posted = await medplum.post(medplum.fhirUrl('Group', String(viewId), '$getpage'), {
      resourceType: 'Parameters',
      parameter: [
        { name: 'offset', valueInteger: 5 },
        { name: 'count', valueInteger: 5 },
      ],
    })
    expect(evaluate(posted, 'Group.member.entity.reference')).toEqual(['Patient/m2', 'Patient/m1'])
    expect(evaluate(posted, "Group.meta.tag.where(code = 'SUBSETTED').exists()")).toEqual([true])
  })

  it('gets an OperationOutcome error for a Group of another tenant', async () => {
    const other = new MedplumClient({ baseUrl: medplum.getBaseUrl(), fhirUrlPath: 'fhir', cacheTime: 0 })
    other.setAccessToken(await tokenFor('tenant-b', 'eve'))
    await expect(other.readResource('Group', String(viewId))).rejects.toMatchObject({
      outcome: { resourceType: 'OperationOutcome', issue: [expect.objectContaining({ code: 'not-found' })] },
    })
  })
})
