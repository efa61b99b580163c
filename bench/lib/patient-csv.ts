import { createWriteStream } from 'node:fs'

/**
 * The 10-column patient CSV of bench:sync and bench:live, one row per patient. `moved`: every
 * `every`th row's hba1c crosses 9 (in or out of the first view); `touched`: every `every`th row's mrn
 * changes (no view filters on it). `every` is 10 unless given: a tenth of the rows.
 */
export async function writePatientCsv(path: string, rows: number, variant: 'same' | 'moved' | 'touched' = 'same', every = 10) {
  const out = createWriteStream(path)
  const write = (s: string) => (out.write(s) ? undefined : new Promise<void>((r) => out.once('drain', () => r())))
  await write('id,family,given,gender,birthDate,city,postalCode,mrn,hba1c,lastVisit\n')
  const families = ['Smith', 'Jones', 'Garcia', 'Müller', 'Rossi', 'Nguyen', 'Kowalski', "O'Brien"]
  const cities = ['Leeds', 'Lyon', 'Porto', 'Gent', 'Bergen']
  for (let i = 0; i < rows; i++) {
    let hba1c = 5 + (i % 70) / 10
    if (variant === 'moved' && i % every === 0) hba1c = hba1c >= 9 ? 5 : 9.5
    const mrn = variant === 'touched' && i % every === 0 ? 2_000_000 + i : 1_000_000 + i
    await write(
      `p${i},${families[i % 8]},Given${i % 997},${i % 2 ? 'female' : 'male'},19${40 + (i % 60)}-0${1 + (i % 9)}-1${i % 10},${cities[i % 5]},${10000 + (i % 89999)},MRN${mrn},${hba1c.toFixed(1)},2026-0${1 + (i % 9)}-2${i % 10}\n`,
    )
  }
  await new Promise<void>((resolve) => out.end(() => resolve()))
}
