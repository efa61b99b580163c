import fhirpath from 'fhirpath'
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import { compileFormula, validateFormula } from '../../../src/engine/formula/index.ts'
import { clock, run, value } from './helpers.ts'

// Expressions other than member paths need the engine, which the service loads on first need.
beforeAll(() => loadFhirPathEngine())

const patient = {
  resourceType: 'Patient',
  id: 'pat-1',
  extension: [
    {
      url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex',
      valueCode: 'F',
    },
    {
      url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race',
      extension: [{ url: 'text', valueString: 'White' }],
    },
  ],
  identifier: [{ system: 'http://hospital.example.org/mrn', value: 'MRN-0042' }],
  active: true,
  name: [
    { use: 'official', family: 'Chalmers', given: ['Peter', 'James'] },
    { use: 'usual', given: ['Jim'] },
  ],
  telecom: [{ system: 'phone', value: '(03) 5555 6473', use: 'work' }],
  gender: 'male',
  birthDate: '1974-12-25',
  deceasedBoolean: false,
  address: [{ use: 'home', city: 'PleasantVille', postalCode: '3999' }],
}

const observation = {
  resourceType: 'Observation',
  id: 'obs-1',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }] },
  subject: { reference: 'Patient/pat-1' },
  effectiveDateTime: '2024-03-01T09:30:00Z',
  valueQuantity: { value: 72.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
}

afterEach(() => vi.restoreAllMocks())

describe('source paths', () => {
  it('read a realistic R4 Patient: one value, several values, none', () => {
    expect(value('Patient.birthDate', {}, patient)).toBe('1974-12-25')
    expect(value('Patient.name.given', {}, patient)).toEqual(['Peter', 'James', 'Jim'])
    expect(value('name.family', {}, patient)).toBe('Chalmers')
    expect(value('Patient.multipleBirthBoolean', {}, patient)).toBeNull()
    expect(value('Patient.active', {}, patient)).toBe(true)
  })

  it('mix with functions and columns', () => {
    expect(value('AGE(Patient.birthDate)', {}, patient)).toBe(49)
    expect(value("DATEDIFF('year', Patient.birthDate, NOW())", {}, patient)).toBe(49)
    expect(value('UPPER(FIRST(Patient.name.given)) & " " & {Ward}', { Ward: 'B2' }, patient)).toBe('PETER B2')
    expect(value('COUNTA(Patient.name.given)', {}, patient)).toBe(3)
    expect(value('CONTAINS(name.given, "jim")', {}, patient)).toBe(true)
  })

  it('are blank when the row has no source record or a different resource', () => {
    expect(value('Patient.birthDate', {})).toBeNull()
    expect(value('Patient.birthDate', {}, observation)).toBeNull()
    expect(value('AGE(Patient.birthDate)', {}, observation)).toBeNull()
  })

  it('are dependencies of the formula', () => {
    expect(validateFormula({ formula: 'AGE(Patient.birthDate) & Patient.gender', columns: [] }).dependencies).toEqual([
      'Patient.birthDate',
      'Patient.gender',
    ])
  })
})

describe('FHIRPATH()', () => {
  it('evaluates where, exists, extensions and first() on the Patient', () => {
    const f = (expr: string) => value(`FHIRPATH("${expr}")`, {}, patient)
    expect(f("Patient.name.where(use = 'official').given.first()")).toBe('Peter')
    expect(f("Patient.name.where(use = 'usual').given")).toBe('Jim')
    expect(f("Patient.telecom.where(system = 'email').exists()")).toBe(false)
    expect(f("Patient.identifier.where(system = 'http://hospital.example.org/mrn').value")).toBe('MRN-0042')
    expect(f("Patient.extension.where(url = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex').value")).toBe('F')
    expect(f("Patient.extension.where(url.endsWith('us-core-race')).extension.where(url = 'text').value")).toBe('White')
    expect(f('Patient.deceased')).toBe(false)
    expect(f('Patient.name.count()')).toBe(2)
  })

  it('reads Observation values by ofType', () => {
    expect(value('FHIRPATH("Observation.value.ofType(Quantity).value") * 2', {}, observation)).toBe(145)
    expect(value('CONVERT(FHIRPATH("Observation.value.ofType(Quantity).value"), "kg", "lbm")', {}, observation)).toBeCloseTo(
      159.835,
      3,
    )
    expect(value('FHIRPATH("Observation.code.coding.where(system = \'http://loinc.org\').code")', {}, observation)).toBe(
      '29463-7',
    )
  })

  it('turns an invalid expression into a static syntax error and a #VALUE! cell', () => {
    expect(validateFormula({ formula: 'FHIRPATH("Patient.name.where(")', columns: [] }).errors[0]).toMatchObject({
      type: 'syntax',
      position: 9,
    })
    expect(run('FHIRPATH("Patient.name.where(")', {}, patient).error?.code).toBe('VALUE')
    expect(run('FHIRPATH({Expr})', { Expr: '((' }, patient).error?.message).toMatch(/^invalid FHIRPath "\(\("/)
  })

  it('compiles each distinct expression once per compiled formula, however many rows', () => {
    const compile = vi.spyOn(fhirpath, 'compile')
    const f = compileFormula('FHIRPATH("Patient.gender.upper()") & Patient.birthDate & FHIRPATH({Expr})')
    const before = compile.mock.calls.length
    for (let i = 0; i < 500; i++) {
      const Expr = i % 2 ? 'Patient.id.lower()' : 'Patient.active.not()'
      f.evaluate({ cells: { Expr }, record: { ...patient, id: `p${i}` } }, clock)
    }
    expect(f.evaluate({ cells: { Expr: 'Patient.id.lower()' }, record: patient }, clock).value).toBe('MALE1974-12-25pat-1')
    expect(compile.mock.calls.length - before).toBe(3)
  })

  it('reads member paths without the engine, compiling one only for a record the navigator leaves to it', () => {
    const compile = vi.spyOn(fhirpath, 'compile')
    const f = compileFormula('Patient.gender & Observation.value.value')
    expect(f.evaluate({ cells: {}, record: patient }, clock).value).toBe('male')
    expect(compile).not.toHaveBeenCalled()
    // Observation.value is the choice type valueQuantity: only the engine's model knows.
    expect(f.evaluate({ cells: {}, record: observation }, clock).value).toBe('72.5')
    expect(f.evaluate({ cells: {}, record: observation }, clock).value).toBe('72.5')
    expect(compile).toHaveBeenCalledTimes(1)
  })
})
