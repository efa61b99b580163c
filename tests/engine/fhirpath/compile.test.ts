import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { beforeAll, describe, expect, it } from 'vitest'
import { checkFhirPath, compileFhirPath } from '../../../src/engine/fhirpath/compile.ts'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import { isMemberPath } from '../../../src/engine/fhirpath/member-path.ts'

// Expressions other than member paths need the engine, which the service loads on first need.
beforeAll(() => loadFhirPathEngine())

const patient = {
  resourceType: 'Patient',
  id: 'p1',
  active: true,
  name: [
    { use: 'official', family: 'Lovelace', given: ['Ada', 'Augusta'] },
    { use: 'nickname', given: ['Ada'] },
  ],
  telecom: [{ system: 'phone', value: '+44 20 7946 0000' }, { system: 'email' }],
  gender: 'female',
  birthDate: '1815-12-10',
  _birthDate: {
    extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/patient-birthTime', valueDateTime: '1815-12-10T04:00:00Z' }],
  },
  address: [{ city: 'London', postalCode: 'W1' }],
  extension: [{ url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex', valueCode: 'F' }],
  managingOrganization: { reference: 'Organization/o1' },
}
const observation = {
  resourceType: 'Observation',
  id: 'o1',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '4548-4', display: 'Hemoglobin A1c' }] },
  subject: { reference: 'Patient/p1' },
  valueQuantity: { value: 7.2, unit: '%' },
  component: [{ code: { text: 'x' }, valueString: 'y' }],
}
const plain = { id: 'r1', family: 'Smith', address: { city: 'Leeds' }, tags: ['a', 'b'], 'birth date': '1950-01-01' }

describe('compileFhirPath', () => {
  const expressions = [
    'Patient.name.family',
    'Patient.name.family.first()',
    'Patient.name.given',
    'Patient.name.given.first()',
    'Patient.gender',
    'Patient.birthDate',
    'Patient.active',
    'Patient.address.city.first()',
    'Patient.telecom.value',
    'Patient.extension.url',
    'Patient.managingOrganization.reference',
    'Observation.value',
    'Observation.valueQuantity.value',
    'Observation.code.coding.code',
    'Observation.component.value',
    'Observation.status',
    'name.given',
    'family',
    'address.city',
    'tags',
    'Patient.missing.path',
  ]
  for (const expression of expressions) {
    it(`answers ${expression} exactly as the FHIRPath engine does`, () => {
      const compiled = compileFhirPath(expression)
      for (const record of [patient, observation, plain]) {
        expect(compiled.evaluate(record)).toEqual(fhirpath.evaluate(record, expression, undefined, r4))
      }
    })
  }

  it('takes a path as a member path (compiled without the engine) only where the engine parses it as one', () => {
    // Every word token of the FHIRPath grammar, and ordinary member names.
    const words = [
      ...['div', 'mod', 'is', 'as', 'in', 'contains', 'and', 'or', 'xor', 'implies', 'true', 'false', 'sort', 'asc', 'desc'],
      ...['year', 'month', 'week', 'day', 'hour', 'minute', 'second', 'millisecond'].flatMap((u) => [u, `${u}s`]),
      ...['family', 'Year', '_id', 'value1', 'first', 'where'],
    ]
    const members = words.flatMap((w) => [w, `${w}.x`, `x.${w}`, `x.${w}.first()`]).filter(isMemberPath)
    expect(members).toContain('x.family.first()')
    expect(members).not.toContain('x.year')
    for (const expression of members) expect(() => fhirpath.compile(expression, r4), expression).not.toThrow()
    expect(isMemberPath('true')).toBe(false)
    expect(isMemberPath("name.where(use = 'official')")).toBe(false)
  })

  it('evaluates functions, where() and the SQL-on-FHIR key functions', () => {
    expect(compileFhirPath("Patient.name.where(use = 'official').given.first()").evaluate(patient)).toEqual(['Ada'])
    expect(compileFhirPath('Observation.value.ofType(Quantity).value').evaluate(observation)).toEqual([7.2])
    expect(compileFhirPath("Patient.telecom.where(system = 'email').value.exists()").evaluate(patient)).toEqual([false])
    expect(compileFhirPath('getResourceKey()').evaluate(observation)).toEqual(['Observation/o1'])
    expect(compileFhirPath('Observation.subject.getReferenceKey(Patient)').evaluate(observation)).toEqual(['Patient/p1'])
    expect(compileFhirPath('Observation.subject.getReferenceKey(Organization)').evaluate(observation)).toEqual([])
  })

  it('reports a syntax error with its 0-based position and an unknown function by name', () => {
    expect(checkFhirPath("Patient.name.where(use = 'official'")).toMatchObject({ position: 35 })
    expect(checkFhirPath('Patient.name.nope()')?.message).toMatch(/nope/)
    expect(checkFhirPath('Patient.name.given.first()')).toBeUndefined()
  })
})
