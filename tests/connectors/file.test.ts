import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ExcelJS from 'exceljs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import file, { csvConnector, excelConnector, jsonConnector } from '../../src/connectors/file.ts'
import { type ConnectorContext, ConnectorError } from '../../src/connectors/types.ts'
import type { FileStore } from '../../src/lib/files.ts'
import { nodeFileStore } from '../../src/runtime/node-files.ts'
import { readAllBatches, testConnectorContext } from '../helpers/connectors.ts'

let root: string
let outside: string
let files: FileStore

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'file-connector-'))
  outside = await mkdtemp(join(tmpdir(), 'file-outside-'))
  files = nodeFileStore(root)
  await writeFile(join(root, 'patients.csv'), 'id,name\np1,Ada\np2,Grace\np3,Alan\n')
  await writeFile(join(root, 'patients.tsv'), 'id\tname\np1\tAda\n')
  await writeFile(join(root, 'semi.txt'), "# export\nid;name\n1;'A;da'\n")
  await writeFile(join(root, 'latin1.csv'), Buffer.from('id,name\n1,J\xfcrgen\n', 'latin1'))
  await writeFile(join(root, 'utf16.csv'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('id,name\n1,Zoë\n', 'utf16le')]))
  await writeFile(join(root, 'bom.csv'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('id\n1\n')]))
  await writeFile(join(root, 'array.json'), JSON.stringify([{ id: 1 }, { id: 2 }]))
  await writeFile(join(root, 'wrapped.json'), JSON.stringify({ meta: {}, result: { rows: [{ id: 'a' }, { id: 'b' }] } }))
  await writeFile(join(root, 'lines.ndjson'), '{"id":1}\n{"id":2}\n{"id":3}\n')
  await writeFile(
    join(root, 'patients.xml'),
    '<patients><patient id="p1"><name>Ada</name></patient><patient id="p2"><name>Grace</name></patient></patients>',
  )
  await writeFile(join(root, 'broken.csv'), 'id,name\n1,"Ada\n2,Grace\n')
  await writeFile(join(root, 'broken.json'), '[{"id":1},\n{"id":}]')
  await writeFile(join(root, 'broken.xml'), '<patients><patient></patients>')
  await writeFile(join(root, 'broken.xlsx'), 'this is not a zip file, only text pretending to be one')
  await writeFile(join(outside, 'secret.csv'), 'secret\nyes\n')
  await symlink(join(outside, 'secret.csv'), join(root, 'escape.csv'))
  const wb = new ExcelJS.Workbook()
  wb.addWorksheet('Summary').addRow(['total', 2])
  const sheet = wb.addWorksheet('Data')
  sheet.addRow(['id', 'admitted'])
  sheet.addRow(['p1', new Date('2026-01-05T00:00:00Z')])
  await wb.xlsx.writeFile(join(root, 'book.xlsx'))
})

afterAll(async () => {
  await rm(root, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

const read = (config: Record<string, unknown>, overrides: Partial<ConnectorContext> = {}, connector = file) =>
  readAllBatches(connector, config, { files, ...overrides })
const data = async (config: Record<string, unknown>, connector = file) =>
  (await read(config, {}, connector)).records.map((r) => r.data)
const failureOf = async (config: Record<string, unknown>, overrides: Partial<ConnectorContext> = {}) => {
  try {
    await read(config, overrides)
  } catch (err) {
    return err as Error
  }
  throw new Error('expected the read to fail')
}

describe('file connector: formats', () => {
  it('reads csv and tsv', async () => {
    expect(await data({ filePath: 'patients.csv', format: 'csv' })).toEqual([
      { id: 'p1', name: 'Ada' },
      { id: 'p2', name: 'Grace' },
      { id: 'p3', name: 'Alan' },
    ])
    expect(await data({ filePath: 'patients.tsv', format: 'tsv' })).toEqual([{ id: 'p1', name: 'Ada' }])
  })

  it('reads a json array, the array at jsonPath, and ndjson', async () => {
    expect(await data({ filePath: 'array.json', format: 'json' })).toEqual([{ id: 1 }, { id: 2 }])
    expect(await data({ filePath: 'wrapped.json', format: 'json', jsonPath: '$.result.rows' })).toEqual([
      { id: 'a' },
      { id: 'b' },
    ])
    expect(await data({ filePath: 'lines.ndjson', format: 'ndjson' })).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }])
  })

  it('reads xml and xlsx', async () => {
    expect(await data({ filePath: 'patients.xml', format: 'xml' })).toEqual([
      { '@id': 'p1', name: 'Ada' },
      { '@id': 'p2', name: 'Grace' },
    ])
    expect(await data({ filePath: 'book.xlsx', format: 'xlsx', sheetName: 'Data' })).toEqual([
      { id: 'p1', admitted: '2026-01-05T00:00:00.000Z' },
    ])
    expect(await data({ filePath: 'book.xlsx', format: 'excel', sheetIndex: 1 })).toHaveLength(1)
  })

  it('lets the csv, json and excel types default their format', async () => {
    expect(await data({ filePath: 'patients.csv' }, csvConnector)).toHaveLength(3)
    expect(await data({ filePath: 'lines.ndjson' }, jsonConnector)).toHaveLength(3)
    expect(await data({ filePath: 'book.xlsx', sheetName: 'Data' }, excelConnector)).toHaveLength(1)
  })
})

describe('file connector: options', () => {
  it('applies delimiter, quoteChar and skipRows', async () => {
    expect(await data({ filePath: 'semi.txt', format: 'csv', delimiter: ';', quoteChar: "'", skipRows: 1 })).toEqual([
      { id: '1', name: 'A;da' },
    ])
  })

  it('reads hasHeaders: false as column1..N', async () => {
    expect(await data({ filePath: 'patients.tsv', format: 'tsv', hasHeaders: false })).toEqual([
      { column1: 'id', column2: 'name' },
      { column1: 'p1', column2: 'Ada' },
    ])
  })

  it('decodes latin1 and utf-16le, and drops a BOM', async () => {
    expect(await data({ filePath: 'latin1.csv', format: 'csv', encoding: 'latin1' })).toEqual([{ id: '1', name: 'Jürgen' }])
    expect(await data({ filePath: 'utf16.csv', format: 'csv', encoding: 'utf-16le' })).toEqual([{ id: '1', name: 'Zoë' }])
    expect(await data({ filePath: 'bom.csv', format: 'csv' })).toEqual([{ id: '1' }])
  })

  it('reads at most maxRows and reports the cut', async () => {
    const { records, report } = await read({ filePath: 'patients.csv', format: 'csv', maxRows: 2 })
    expect(records.map((r) => r.data.id)).toEqual(['p1', 'p2'])
    expect(report.truncated).toEqual(["Read the first 2 rows of 'patients.csv' (maxRows); the file has more"])
  })

  it('reports nothing when maxRows is exactly the number of rows', async () => {
    const { records, report } = await read({ filePath: 'patients.csv', format: 'csv', maxRows: 3 })
    expect(records).toHaveLength(3)
    expect(report.truncated).toEqual([])
  })
})

describe('file connector: config validation', () => {
  const issues = (config: Record<string, unknown>, connector = file) => {
    const parsed = connector.configSchema.safeParse(config)
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
  }

  it('refuses paths that leave the files root', () => {
    expect(issues({ filePath: '../x.csv', format: 'csv' })).toEqual(["filePath: must not contain '..' segments"])
    expect(issues({ filePath: '/etc/passwd', format: 'csv' })).toEqual(['filePath: must be a path relative to the files root'])
  })

  it('requires a known format for file sources and refuses a conflicting one for typed sources', () => {
    expect(issues({ filePath: 'a.csv' })).toEqual(['format: required: one of csv, tsv, json, ndjson, xml, excel, xlsx'])
    expect(issues({ filePath: 'a.csv', format: 'parquet' })[0]).toMatch(/^format: must be one of/)
    expect(issues({ filePath: 'a.csv', format: 'json' }, csvConnector)).toEqual([
      "format: a csv source reads csv or tsv files, not 'json'",
    ])
  })

  it('checks the extension against allowedExtensions and the encoding label', () => {
    expect(issues({ filePath: 'a.txt', format: 'csv', allowedExtensions: ['.csv', 'tsv'] })).toEqual([
      "filePath: extension '.txt' is not in allowedExtensions (.csv, tsv)",
    ])
    expect(issues({ filePath: 'a.CSV', format: 'csv', allowedExtensions: ['csv'] })).toEqual([])
    expect(issues({ filePath: 'a.csv', format: 'csv', encoding: 'klingon' })[0]).toMatch(/^encoding: is not a text encoding/)
  })
})

describe('file connector: refusals and malformed files', () => {
  it('refuses a symlink that leads outside the files root', async () => {
    expect((await failureOf({ filePath: 'escape.csv', format: 'csv' })).message).toBe(
      "File path 'escape.csv' leads outside the files folder",
    )
  })

  it('names a missing file', async () => {
    expect((await failureOf({ filePath: 'nope.csv', format: 'csv' })).message).toBe(
      "File 'nope.csv' does not exist in the files folder",
    )
  })

  it('ends with a clear error over maxFileSize or the service byte limit', async () => {
    expect((await failureOf({ filePath: 'patients.csv', format: 'csv', maxFileSize: 10 })).message).toMatch(
      /^File 'patients.csv' is \d+ bytes, more than its maxFileSize of 10 bytes$/,
    )
    const limits = { maxBytes: 10, maxRecords: 100 }
    expect((await failureOf({ filePath: 'patients.csv', format: 'csv' }, { limits })).message).toMatch(
      /more than the service's limit of 10 bytes per sync/,
    )
  })

  it('refuses on a runtime given no file storage, naming the runtime and the R2 binding', async () => {
    expect(
      (await failureOf({ filePath: 'patients.csv', format: 'csv' }, { files: undefined, runtime: 'workers' })).message,
    ).toMatch(/^A file data source needs file storage, which the workers runtime was not given: bind an R2 bucket as FILES/)
  })

  it('ends the read when the file grows past its limit while it is read', async () => {
    // The store measures 12 bytes; by the time it is read the file holds more than maxFileSize.
    const growing: FileStore = {
      ...files,
      stat: async () => ({ size: 12 }),
      read: async () => new Blob(['id,name\np1,Ada\np2,Grace\np3,Alan\n']).stream(),
    }
    const err = await failureOf({ filePath: 'patients.csv', format: 'csv', maxFileSize: 20 }, { files: growing })
    expect(err).toBeInstanceOf(ConnectorError)
    expect(err.message).toBe("File 'patients.csv' grew past 20 bytes while it was read")
  })

  it('ends an xlsx read with the same error when the workbook grows past its limit', async () => {
    const growing: FileStore = { ...files, stat: async () => ({ size: 12 }) }
    const err = await failureOf({ filePath: 'book.xlsx', format: 'excel', maxFileSize: 200 }, { files: growing })
    expect(err).toBeInstanceOf(ConnectorError)
    expect(err.message).toBe("File 'book.xlsx' grew past 200 bytes while it was read")
  })

  it('says why a malformed csv, json, xml or xlsx file cannot be read', async () => {
    expect((await failureOf({ filePath: 'broken.csv', format: 'csv' })).message).toBe(
      'Malformed CSV: a quoted field opened on line 2 is never closed',
    )
    expect((await failureOf({ filePath: 'broken.json', format: 'json' })).message).toMatch(/^Malformed JSON on line 2/)
    expect((await failureOf({ filePath: 'broken.xml', format: 'xml' })).message).toMatch(/^Malformed XML on line 1/)
    expect((await failureOf({ filePath: 'broken.xlsx', format: 'excel' })).message).toMatch(
      /^The file is not a readable xlsx workbook/,
    )
    // The parsers' format errors reach the sync as connector errors (their message is the source's errorMessage).
    for (const [filePath, format] of [
      ['broken.csv', 'csv'],
      ['broken.json', 'json'],
      ['broken.xml', 'xml'],
      ['broken.xlsx', 'excel'],
    ]) {
      expect(await failureOf({ filePath, format }), filePath).toBeInstanceOf(ConnectorError)
    }
  })
})

describe('file connector: large files', () => {
  it('streams 200k rows in batches of 1000, the first batch arriving before most of the file is read', async () => {
    const lines = ['id,name,age,city,score']
    for (let i = 0; i < 200_000; i++) lines.push(`${i},Name ${i},${i % 90},City ${i % 50},${(i * 7) % 1000}`)
    const text = `${lines.join('\n')}\n`
    await writeFile(join(root, 'big.csv'), text)
    let bytesRead = 0
    const counting: FileStore = {
      ...files,
      async read(path, options) {
        const stream = await files.read(path, options)
        return stream.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              bytesRead += chunk.byteLength
              controller.enqueue(chunk)
            },
          }),
        )
      },
    }
    const ctx = testConnectorContext({ files: counting, signal: AbortSignal.timeout(60_000) })
    let batches = 0
    let rows = 0
    let largest = 0
    let readAtFirstBatch = 0
    let last: Record<string, unknown> | undefined
    for await (const batch of file.read(file.configSchema.parse({ filePath: 'big.csv', format: 'csv' }), ctx)) {
      if (batches === 0) readAtFirstBatch = bytesRead
      batches++
      rows += batch.length
      largest = Math.max(largest, batch.length)
      last = batch[batch.length - 1].data
    }
    expect(rows).toBe(200_000)
    expect(batches).toBe(200)
    expect(largest).toBe(1000)
    expect(bytesRead).toBe(text.length)
    expect(readAtFirstBatch).toBeLessThan(text.length / 10)
    expect(last).toEqual({ id: '199999', name: 'Name 199999', age: '19', city: 'City 49', score: String((199_999 * 7) % 1000) })
  }, 60_000)
})
