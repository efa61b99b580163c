import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.ts'
import { operationOutcome } from '../../src/http/fhir.ts'
import { readGroup } from '../../src/modules/fhir/group.service.ts'
import { serviceCtx } from '../helpers/app.ts'
import { type RowsWorld, rowsWorld } from '../modules/rows/fixtures.ts'

/**
 * The Group read answers at most MEMBER_INLINE_CAP rows (10,000); a longer list is a 400 too-costly
 * pointing at $getpage (Argonaut Patient Lists: a read SHOULD NOT answer a first page). Checked here
 * through the service with a small cap (a 10,001-row list per test run would cost more than it
 * shows). Node only.
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

describe('the Group read past its cap', () => {
  it('is a 400 too-costly naming the size and the $getpage URL of the first page, not a first page', async () => {
    const reading = readGroup(serviceCtx(w.t.deps, 'tenant-a', 'alice'), viewId, BASE, 3)
    await expect(reading).rejects.toBeInstanceOf(AppError)
    const err = (await reading.catch((e) => e)) as AppError
    expect(err).toMatchObject({ status: 400, code: 'TOO_COSTLY' })
    expect(err.details).toEqual({ quantity: 5, getpage: `${BASE}/Group/${viewId}/$getpage?offset=0&count=3` })
    expect(err.message).toContain('$getpage')
    expect(operationOutcome(err).issue[0]).toMatchObject({ severity: 'error', code: 'too-costly' })
  })

  it('answers a list within the cap whole: no tag, the row without a patient under its extension', async () => {
    const group = await readGroup(serviceCtx(w.t.deps, 'tenant-a', 'alice'), viewId, BASE, 5)
    expect(group.quantity).toBe(5)
    expect(group.member).toHaveLength(4)
    expect(group.meta.tag).toBeUndefined()
    expect(group.extension).toEqual([
      {
        url: `${BASE}/StructureDefinition/row-without-patient`,
        extension: [
          { url: 'key', valueString: 'enc-3' },
          { url: 'row', valueInteger: w.ids['enc-3'] },
        ],
      },
    ])
  })
})
