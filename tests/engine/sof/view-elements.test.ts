import { beforeAll, describe, expect, it } from 'vitest'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import { compileView } from '../../../src/engine/sof/index.ts'

/**
 * Which top-level elements a view reads (src/engine/sof/elements-read.ts): a run over stored
 * records reads only those, so the answer may name too many, never too few. The official suite
 * over stored records (tests/modules/viewdefinitions/viewdefinitions.source-conformance.test.ts)
 * checks that no answer changes; these pin the rules themselves.
 */

beforeAll(() => loadFhirPathEngine())

const elementsOf = (resource: string, select: unknown[], extra: Record<string, unknown> = {}) =>
  compileView({ resourceType: 'ViewDefinition', status: 'active', resource, select, ...extra }).elements

describe('the elements a view reads', () => {
  it('are the members its resource-level paths name, with their primitive-extension siblings', () => {
    const elements = elementsOf('Patient', [
      { column: [{ name: 'id', path: 'id' }] },
      {
        forEach: 'name',
        column: [{ name: 'family', path: 'family' }],
        select: [{ forEach: 'given', column: [{ name: 'given', path: '$this' }] }],
      },
    ])
    // `family` and `given` are read inside each name, not from the resource.
    expect(elements).toEqual(['_id', '_name', 'id', 'name', 'resourceType'])
  })

  it('always include resourceType and id, which every run checks and names errors by', () => {
    expect(elementsOf('Patient', [{ column: [{ name: 'g', path: 'gender' }] }])).toEqual([
      '_gender',
      '_id',
      'gender',
      'id',
      'resourceType',
    ])
  })

  it('count every member a path names at the resource, where clauses included, not constants', () => {
    const elements = elementsOf('Patient', [{ column: [{ name: 'official', path: 'name.where(use = %use).family.first()' }] }], {
      constant: [{ name: 'use', valueString: 'official' }],
      where: [{ path: 'active and deceased.exists().not()' }],
    })
    expect(elements).toEqual(expect.arrayContaining(['name', 'use', 'family', 'active']))
    // A choice element brings every typed name, each with its sibling.
    expect(elements).toEqual(expect.arrayContaining(['deceasedBoolean', 'deceasedDateTime', '_deceasedDateTime']))
    expect(elements).not.toContain('official')
  })

  it('expand a choice element at the resource into its typed names', () => {
    const elements = elementsOf('Observation', [{ column: [{ name: 'v', path: 'value.ofType(Quantity).value' }] }])
    expect(elements).toEqual(expect.arrayContaining(['value', 'valueQuantity', 'valueString', 'valueBoolean', '_valueString']))
  })

  it('count extension() and getResourceKey() as the elements they read', () => {
    expect(elementsOf('Patient', [{ column: [{ name: 'e', path: "extension('http://x').value.ofType(code)" }] }])).toContain(
      'extension',
    )
    expect(elementsOf('Patient', [{ column: [{ name: 'k', path: 'getResourceKey()' }] }])).toEqual(['_id', 'id', 'resourceType'])
  })

  it('are the whole resource when a path can see all of it', () => {
    const whole = [
      [{ column: [{ name: 'r', path: '$this' }] }],
      [{ column: [{ name: 'r', path: 'where($this.active).id' }] }],
      [{ forEach: 'name', column: [{ name: 'r', path: '%resource.id' }] }],
      [{ forEach: 'name', column: [{ name: 'r', path: '%rootResource.gender' }] }],
      [{ column: [{ name: 'r', path: 'descendants().count()' }] }],
      [{ forEach: 'contact', column: [{ name: 'r', path: 'children().count()' }] }],
      [{ column: [{ name: 'r', path: '`strange-member`' }] }],
    ]
    for (const select of whole) expect(elementsOf('Patient', select), JSON.stringify(select)).toBeUndefined()
  })

  it('are not the whole resource for $this inside an unnested element', () => {
    // `given` is counted too: a path's members all count, wherever they stand in it.
    expect(elementsOf('Patient', [{ forEach: 'name.given', column: [{ name: 'g', path: '$this' }] }])).toEqual([
      '_given',
      '_id',
      '_name',
      'given',
      'id',
      'name',
      'resourceType',
    ])
  })
})
