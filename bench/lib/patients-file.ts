import { closeSync, openSync, writeSync } from 'node:fs'
import { patient } from './fhir-patients.ts'
import { turn } from './interleaved.ts'

/** Patients generated and written per chunk, so memory stays flat whatever the row count. */
const CHUNK = 10_000

type Patient = ReturnType<typeof patient>

/**
 * Writes `rows` synthetic Patients (`patient(0)` … `patient(rows - 1)`) to `path` as NDJSON, a
 * chunk at a time, handing each chunk and the index of its first Patient to `each` (bench:views
 * inserts the same rows in its bare table); the event loop turns after every chunk.
 */
export async function writePatientsFile(
  path: string,
  rows: number,
  each?: (patients: Patient[], from: number) => Promise<void>,
): Promise<void> {
  const file = openSync(path, 'w')
  try {
    for (let from = 0; from < rows; from += CHUNK) {
      const patients: Patient[] = []
      for (let i = from; i < Math.min(rows, from + CHUNK); i++) patients.push(patient(i))
      writeSync(file, `${from > 0 ? '\n' : ''}${patients.map((p) => JSON.stringify(p)).join('\n')}`)
      if (each) await each(patients, from)
      await turn()
    }
  } finally {
    closeSync(file)
  }
}
