import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readGroup } from '../../src/modules/fhir/group.service.ts'
import { serviceCtx } from '../helpers/app.ts'
import { type RowsWorld, rowsWorld } from '../modules/rows/fixtures.ts'

/**
 * The Group read inlines at most MEMBER_INLINE_CAP rows (10,000); a longer list is answered with
 * those, tagged SUBSETTED, and a link to $getpage for the rest. Checked here through the service with
 * a small cap (a 10,001-row list per test run would cost more than it shows). Node only.
 */

const PATIENTS = Array.from({ length: 5 }, (_, i) => ({
  id: i === 2 ? 'enc-3' : `Patient/c${i + 1}`,
  name: `P${i + 1}`,
  age: 40 + i,
}))
const BASE = 'https://panels.example.org/fhir'

let w: RowsWorld
let viewId: number

beforeAll(async () => {
  w = await rowsWorld(PATIENTS)
  const view = await w.alice.post('/api/views', {
    name: 'Capped',
    panelId: w.panelId,
    sorting: [{ columnTitle: 'Age', direction: 'asc' }],
  })
  viewId = view.body.id
})

afterAll(async () => {
  await w?.server.close()
})

describe('the Group read past its inline cap', () => {
  it('answers the first rows, tagged SUBSETTED, with the $getpage URL of the next ones', async () => {
    const group = await readGroup(serviceCtx(w.t.deps, 'tenant-a', 'alice'), viewId, BASE, 3)
    expect(group.quantity).toBe(5)
    expect(group.member).toEqual([{ entity: { reference: 'Patient/c1' } }, { entity: { reference: 'Patient/c2' } }])
    expect(group.meta.tag).toEqual([expect.objectContaining({ code: 'SUBSETTED' })])
    expect(group.extension).toEqual([
      {
        url: `${BASE}/StructureDefinition/row-without-patient`,
        extension: [
          { url: 'key', valueString: 'enc-3' },
          { url: 'row', valueInteger: w.ids['enc-3'] },
        ],
      },
      { url: `${BASE}/StructureDefinition/members-next-page`, valueUrl: `${BASE}/Group/${viewId}/$getpage?offset=3&count=3` },
    ])
  })

  it('answers a list within the cap whole, without the tag or the link', async () => {
    const group = await readGroup(serviceCtx(w.t.deps, 'tenant-a', 'alice'), viewId, BASE, 5)
    expect(group.member).toHaveLength(4)
    expect(group.meta.tag).toBeUndefined()
    expect(group.extension).toHaveLength(1)
  })
})
