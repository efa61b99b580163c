import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import file from '../../src/connectors/file.ts'
import type { FileStore } from '../../src/lib/files.ts'
import { nodeFileStore } from '../../src/runtime/node-files.ts'
import { slowFileStore } from '../helpers/stalled-sources.ts'
import { failing, readWith, testConnector } from './contract.ts'

const ROWS = 30
let root: string
let outside: string
let files: FileStore

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'contract-files-'))
  outside = await mkdtemp(join(tmpdir(), 'contract-outside-'))
  files = nodeFileStore(root)
  const rows = Array.from({ length: ROWS }, (_, i) => `${i + 1},name ${i + 1}`)
  await writeFile(join(root, 'rows.csv'), `id,name\n${rows.join('\n')}\n`)
  await writeFile(join(root, 'broken.csv'), 'id,name\n1,"open\n')
  await mkdir(join(root, 'folder.csv'))
  await writeFile(join(outside, 'elsewhere.csv'), 'id\n1\n')
  await symlink(join(outside, 'elsewhere.csv'), join(root, 'escape.csv'))
})

afterAll(async () => {
  await rm(root, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

const source = () => ({ config: { filePath: 'rows.csv', format: 'csv' }, context: { files } })

testConnector({
  name: 'file',
  connector: file,
  config: {
    bad: {
      config: { filePath: '../up.csv', format: 'parquet', skipRows: -1, encoding: 'klingon' },
      fields: ['filePath', 'format', 'skipRows', 'encoding'],
    },
    missing: { config: {}, fields: ['filePath', 'format'] },
  },
  records: readWith(file, source),
  keys: 'content',
  signal: { hanging: () => ({ config: { filePath: 'slow.csv', format: 'csv' }, context: { files: slowFileStore() } }) },
  limits: {
    source,
    count: ROWS,
    maxRecords: 'refuses',
    maxBytes: 'refuses',
    cap: { config: { maxRows: 10 }, field: 'maxRows', records: 10 },
  },
  // A file config holds no credentials: what must not show is where the files live.
  failures: () =>
    [
      ['a missing file', 'missing.csv'],
      ['a symlink leading outside the files folder', 'escape.csv'],
      ['a folder', 'folder.csv'],
      ['a malformed file', 'broken.csv'],
    ].map(([what, filePath]) => ({
      what,
      run: failing(file, { filePath, format: 'csv' }, { files }),
      secrets: [],
      paths: [root, outside, tmpdir()],
    })),
})
