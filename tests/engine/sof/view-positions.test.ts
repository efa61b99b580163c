import { beforeAll, describe, expect, it } from 'vitest'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import { compileView, positionedRowsOf, rowsOf } from '../../../src/engine/sof/index.ts'
import { GIVEN_NAMES_VIEW } from '../../helpers/view-definitions.ts'

/**
 * Row positions (src/engine/sof/positions.ts): where in the resource each row's unnested elements
 * sit. A panel defined by a view keys its rows by them, so they must be unique per resource and
 * follow the JSON's own indexes.
 */

beforeAll(() => loadFhirPathEngine())

const patient = {
  resourceType: 'Patient',
  id: 'p1',
  telecom: [{ value: 't1' }, { value: 't2' }],
  address: [{ city: 'Leeds' }],
  name: [
    { use: 'usual', family: 'A', given: ['a'] },
    { use: 'official', family: 'B', given: ['b1', null, 'b2'] },
  ],
}

const positions = (view: unknown, resource: unknown = patient) =>
  positionedRowsOf(compileView(view), resource).map((r) => [r.position, ...r.row])

describe('positionedRowsOf', () => {
  it('gives the JSON position of nested forEach elements, nulls counted', () => {
    expect(positions(GIVEN_NAMES_VIEW)).toEqual([
      ['name[0].given[0]', 'p1', 'A', 'a'],
      ['name[1].given[0]', 'p1', 'B', 'b1'],
      ['name[1].given[2]', 'p1', 'B', 'b2'],
    ])
    // The same rows as a plain run.
    expect(positions(GIVEN_NAMES_VIEW).map((r) => r.slice(1))).toEqual(rowsOf(compileView(GIVEN_NAMES_VIEW), patient))
  })

  it('locates elements a function selected at their place in the JSON', () => {
    const view = {
      resource: 'Patient',
      select: [{ forEach: "name.where(use = 'official')", column: [{ name: 'family', path: 'family' }] }],
    }
    expect(positions(view)).toEqual([['name[1]', 'B']])
  })

  it('marks unionAll branches, so rows of branches over the same element differ', () => {
    const view = {
      resource: 'Patient',
      select: [
        {
          unionAll: [
            { forEach: 'telecom', column: [{ name: 'v', path: 'value' }] },
            { forEach: 'address', column: [{ name: 'v', path: 'city' }] },
            { column: [{ name: 'v', path: 'id' }] },
            { column: [{ name: 'v', path: 'id' }] },
          ],
        },
      ],
    }
    const rows = positions(view)
    expect(rows).toEqual([
      ['unionAll[0],telecom[0]', 't1'],
      ['unionAll[0],telecom[1]', 't2'],
      ['unionAll[1],address[0]', 'Leeds'],
      ['unionAll[2]', 'p1'],
      ['unionAll[3]', 'p1'],
    ])
  })

  it('gives the resource row an empty position, forEachOrNull over nothing included', () => {
    expect(positions({ resource: 'Patient', select: [{ column: [{ name: 'id', path: 'id' }] }] })).toEqual([['', 'p1']])
    expect(
      positions({ resource: 'Patient', select: [{ forEachOrNull: 'contact', column: [{ name: 'f', path: 'name.family' }] }] }),
    ).toEqual([['', null]])
  })

  it('follows repeat through its levels', () => {
    const qr = {
      resourceType: 'QuestionnaireResponse',
      id: 'q',
      item: [{ linkId: '1', item: [{ linkId: '1.1' }, { linkId: '1.2', answer: [{ item: [{ linkId: '1.2.1' }] }] }] }],
    }
    const view = {
      resource: 'QuestionnaireResponse',
      select: [{ repeat: ['item', 'answer.item'], column: [{ name: 'linkId', path: 'linkId' }] }],
    }
    expect(positions(view, qr)).toEqual([
      ['item[0]', '1'],
      ['item[0].item[0]', '1.1'],
      ['item[0].item[1]', '1.2'],
      ['item[0].item[1].answer[0].item[0]', '1.2.1'],
    ])
  })
})
