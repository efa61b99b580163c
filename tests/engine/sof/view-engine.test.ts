import { beforeAll, describe, expect, it } from 'vitest'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import {
  compileView,
  prepareView,
  rowObject,
  rowsOf,
  runView,
  runViewAsync,
  ViewDefinitionError,
  ViewRunError,
} from '../../../src/engine/sof/index.ts'

/**
 * The SQL-on-FHIR engine on its own (src/engine/sof): what the official suite does not pin down —
 * where an invalid view is said to be wrong, that unnested member paths read the JSON itself, that
 * rows come one resource at a time. The official suite runs through the HTTP operation
 * (tests/modules/viewdefinitions/viewdefinitions.conformance.test.ts).
 */

beforeAll(() => loadFhirPathEngine())

const patient = (id: string, extra: Record<string, any> = {}): Record<string, any> => ({ resourceType: 'Patient', id, ...extra })

const issuesOf = (view: unknown) => {
  try {
    compileView(view)
  } catch (err) {
    if (err instanceof ViewDefinitionError) return err.issues
    throw err
  }
  return []
}

describe('validation', () => {
  it('names the place of every problem at once', () => {
    const issues = issuesOf({
      resource: 'Patient',
      bogus: 1,
      constant: [{ name: 'c', valueDate: 'yesterday' }],
      select: [
        { column: [{ name: 'id', path: 'id' }] },
        {
          column: [
            { name: 'id', path: 'name.where(' },
            { name: '1bad', path: 'id', collection: 'yes' },
          ],
        },
        { forEach: 'name', forEachOrNull: 'name', column: [{ name: 'x', path: '%missing' }] },
      ],
      where: [{ path: 'active', extra: true }],
    })
    expect(issues.map((i) => i.path).sort()).toEqual(
      [
        'bogus',
        'constant[0].valueDate',
        'select[1].column[0].name',
        'select[1].column[0].path',
        'select[1].column[1].name',
        'select[1].column[1].collection',
        'select[2]',
        'select[2].column[0].path',
        'where[0].extra',
      ].sort(),
    )
    expect(issues.find((i) => i.path === 'select[2].column[0].path')?.message).toMatch(/%missing/)
  })

  it('refuses duplicate column names across selects', () => {
    const issues = issuesOf({
      resource: 'Patient',
      select: [{ column: [{ name: 'a', path: 'id' }] }, { column: [{ name: 'a', path: 'gender' }] }],
    })
    expect(issues).toEqual([{ path: 'select[1].column[0].name', message: expect.stringMatching(/duplicate column name a/) }])
  })

  it('refuses a resource type R4 does not have and an unknown function', () => {
    expect(issuesOf({ resource: 'Patients', select: [{ column: [{ name: 'a', path: 'id' }] }] })[0].path).toBe('resource')
    expect(issuesOf({ resource: 'Patient', select: [{ column: [{ name: 'a', path: 'name.frobnicate()' }] }] })[0]).toMatchObject({
      path: 'select[0].column[0].path',
      message: expect.stringMatching(/frobnicate/),
    })
  })

  it('writes constants of every kind as literals, leaving strings that look like them alone', async () => {
    const plan = await prepareView({
      resource: 'Patient',
      constant: [
        { name: 'born', valueDate: '1970-01-02' },
        { name: 'quote', valueString: "it's" },
        { name: 'n', valueInteger: 1 },
      ],
      select: [
        {
          column: [
            { name: 'same_day', path: 'birthDate = %born', type: 'boolean' },
            { name: 'text', path: "'%born ' + %quote", type: 'string' },
            { name: 'second', path: 'name[%n].family', type: 'string' },
          ],
        },
      ],
    })
    const rows = rowsOf(plan, patient('p', { birthDate: '1970-01-02', name: [{ family: 'A' }, { family: 'B' }] }))
    expect(rows.map((r) => rowObject(plan, r))).toEqual([{ same_day: true, text: "%born it's", second: 'B' }])
  })
})

describe('running', () => {
  const view = {
    resource: 'Patient',
    select: [
      { column: [{ name: 'id', path: 'getResourceKey()' }] },
      {
        forEach: 'name',
        column: [{ name: 'name', path: '$this', type: 'HumanName' }],
        select: [{ forEach: 'given', column: [{ name: 'given', path: '$this' }] }],
      },
    ],
  }

  it('unnests member paths by reading the JSON itself (no copy by the FHIRPath engine)', async () => {
    const plan = await prepareView(view)
    const resource = patient('p1', { name: [{ family: 'F', given: ['a', 'b'] }] })
    const rows = rowsOf(plan, resource)
    expect(rows).toHaveLength(2)
    // The engine answers copies of elements; the member navigator the elements themselves.
    expect(rows[0][1]).toBe(resource.name[0])
    expect(rows.map((r) => [r[0], r[2]])).toEqual([
      ['Patient/p1', 'a'],
      ['Patient/p1', 'b'],
    ])
  })

  it('types unnested elements for the engine: a choice type under forEach', async () => {
    const plan = await prepareView({
      resource: 'Observation',
      select: [{ forEach: 'component', column: [{ name: 'v', path: 'value.ofType(Quantity).value', type: 'decimal' }] }],
    })
    const obs = { resourceType: 'Observation', id: 'o', component: [{ valueQuantity: { value: 120 } }, { valueString: 'x' }] }
    expect(rowsOf(plan, obs)).toEqual([[120], [null]])
  })

  it('streams: rows of the first resource come before the next resource is read', async () => {
    const plan = await prepareView(view)
    const read: string[] = []
    async function* resources() {
      for (const id of ['a', 'b']) {
        read.push(id)
        yield patient(id, { name: [{ given: ['g'] }] })
      }
    }
    const rows = runViewAsync(plan, resources())
    const first = await rows.next()
    expect(first.value?.[0]).toBe('Patient/a')
    expect(read).toEqual(['a'])
  })

  it('skips resources of other types and stops at a column with several values', async () => {
    const plan = await prepareView({ resource: 'Patient', select: [{ column: [{ name: 'family', path: 'name.family' }] }] })
    expect([...runView(plan, [{ resourceType: 'Observation', id: 'o' }, patient('p', { name: [{ family: 'A' }] })])]).toEqual([
      ['A'],
    ])
    expect(() => rowsOf(plan, patient('two', { name: [{ family: 'A' }, { family: 'B' }] }))).toThrow(ViewRunError)
  })
})
