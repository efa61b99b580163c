import { describe, expect, it } from 'vitest'
import { patientOfRow, patientReferenceOf } from '../../../src/modules/fhir-topic/fhir.patient.ts'

describe('the patient of a row', () => {
  it('reads Patient/<id>, a bare id and an absolute Patient URL; nothing else', () => {
    expect(patientReferenceOf('Patient/p-1.2')).toBe('Patient/p-1.2')
    expect(patientReferenceOf('p1')).toBe('Patient/p1')
    expect(patientReferenceOf(42)).toBe('Patient/42')
    expect(patientReferenceOf('https://ehr.example/fhir/Patient/9')).toBe('https://ehr.example/fhir/Patient/9')
    for (const v of ['Observation/1', 'two words', '', null, undefined, 4.5, -1, ['p1'], { id: 'p1' }]) {
      expect(patientReferenceOf(v)).toBeUndefined()
    }
  })

  it('takes the workflow column first, then a Patient/<id> key', () => {
    expect(patientOfRow('Patient/k', true, 'p7')).toBe('Patient/p7')
    expect(patientOfRow('Patient/k', true, null)).toBe('Patient/k')
    expect(patientOfRow('Patient/k', true, '  ')).toBe('Patient/k')
    expect(patientOfRow('Patient/k', false, 'p7')).toBe('Patient/k')
    expect(patientOfRow('import:3', true, null)).toBeUndefined()
  })

  it('gives no patient when the workflow column holds a value that names none (the key does not stand in)', () => {
    expect(patientOfRow('Patient/k', true, 'two words')).toBeUndefined()
  })
})
