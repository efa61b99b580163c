import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp } from '../helpers/app.ts'
import { tokenFor } from '../helpers/auth.ts'
import { blockAfter, type CurlCall, type GuideRun, runGuide, shellBlocks, shellWords } from './guide-commands.ts'

const GUIDE = new URL('../../docs/getting-started.md', import.meta.url)

let markdown: string
let run: GuideRun
let filesDir: string

/** The calls whose command contains every one of `parts`. */
const callsWith = (...parts: string[]): CurlCall[] => run.calls.filter((c) => parts.every((p) => c.command.includes(p)))
const json = (call: CurlCall) => JSON.parse(call.text)
/** The JSON lines of a text block ("..." lines skipped). */
const jsonLines = (block: string) =>
  block
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))

beforeAll(async () => {
  markdown = await readFile(GUIDE, 'utf8')
  filesDir = await mkdtemp(join(tmpdir(), 'getting-started-'))
  const t = await makeTestApp({ filesDir })
  run = await runGuide(shellBlocks(markdown), {
    origin: 'http://localhost:3001',
    request: (path, init) => Promise.resolve(t.app.request(path, init)),
    token: (tenant, user) => tokenFor(tenant, user),
  })
})

afterAll(async () => {
  await rm(filesDir, { recursive: true, force: true })
})

describe('docs/getting-started.md, run command by command', () => {
  it('succeeds at every call but the one the guide shows failing (a colleague before publishing)', () => {
    expect(run.calls.length).toBeGreaterThanOrEqual(14)
    const failed = run.calls.filter((c) => c.status >= 300)
    expect(failed.map((c) => [c.method, c.path, c.status])).toEqual([['GET', `/api/views/${run.vars.VIEW}/rows`, 404]])
    expect(failed[0].headers.Authorization).toBe(`Bearer ${run.vars.NURSE}`)
    expect(json(failed[0]).error).toBe('View not found')
  })

  it('creates the csv source (whose first sync finds no file, as the guide says), then fills it by upload', () => {
    const [created] = callsWith('/datasources" ')
    expect(json(created)).toMatchObject({ type: 'csv', syncStatus: 'error' })
    expect(markdown).toContain(`"errorMessage":"${json(created).errorMessage}"`)
    const [upload] = callsWith('/file?filename=patients.csv')
    const shown = JSON.parse(blockAfter(markdown, '--data-binary @patients.csv', 'json'))
    expect({ syncStatus: json(upload).syncStatus, message: json(upload).message }).toEqual(shown)
  })

  it('creates six base columns and one calculated column', () => {
    const base = callsWith('/columns/base').map(json)
    expect(base.map((c) => [c.name, c.type])).toEqual([
      ['MRN', 'text'],
      ['Family', 'text'],
      ['Given', 'text'],
      ['Birth date', 'date'],
      ['HbA1c', 'number'],
      ['Last visit', 'date'],
    ])
    const [age] = callsWith('/columns/calculated').map(json)
    expect(age).toMatchObject({ columnType: 'calculated', name: 'Age', type: 'number', dependencies: ['Birth date'] })
  })

  it("answers the panel's rows the guide shows (ages aside: they count to today)", () => {
    const rows = json(callsWith('/panels/$PANEL/rows')[0]).data
    expect(rows).toHaveLength(5)
    const shown = jsonLines(blockAfter(markdown, '"$API/panels/$PANEL/rows"'))
    expect(shown.length).toBeGreaterThan(0)
    for (const [i, row] of shown.entries()) {
      expect({ ...rows[i], Age: undefined }).toMatchObject({ ...row, Age: undefined })
      expect(typeof rows[i].Age).toBe('number')
    }
  })

  it("answers the view's rows as the guide shows them: HbA1c above 8, highest first", () => {
    const shown = jsonLines(blockAfter(markdown, '"$API/views/$VIEW/rows" -H "$AUTH"'))
    const rows = json(callsWith('/views/$VIEW/rows" -H "$AUTH"')[0]).data
    const project = (r: Record<string, unknown>) => ({ Family: r.Family, Given: r.Given, HbA1c: r.HbA1c })
    expect(rows.map(project)).toEqual(shown.map(project))
    expect(shown.map((r) => r.Family)).toEqual(['Weiss', 'Dubois', 'Berg'])
  })

  it('publishes the view, and the colleague then reads the same rows', () => {
    const [publish] = callsWith('/publish')
    expect(json(publish)).toMatchObject({ isPublished: true, publishConfig: { permissions: ['read'], allowDownload: true } })
    const colleague = callsWith('/views/$VIEW/rows', '$NURSE')
    expect(colleague.map((c) => c.status)).toEqual([404, 200])
    expect(json(colleague[1]).data.map((r: { Family: string }) => r.Family)).toEqual(['Weiss', 'Dubois', 'Berg'])
  })

  it("exports the view as CSV: the header the guide shows, then the view's three rows", () => {
    const csv = run.files['hba1c-above-8.csv'].trim().split(/\r?\n/)
    expect(csv[0]).toBe(blockAfter(markdown, 'head -1 hba1c-above-8.csv').trim())
    expect(
      csv
        .slice(1)
        .map((l) => l.split(',')[0])
        .sort(),
    ).toEqual(['Berg', 'Dubois', 'Weiss'])
  })
})

describe('the command runner', () => {
  it('splits words as a shell does: quotes, variables, concatenation and pipes', () => {
    const words = shellWords(`curl -d '{"a":'"$N"',"b":"x y"}' "$API/p" | jq -c '.data[] | {a}'`, { N: '7', API: '/api' })
    expect(words.filter((w) => typeof w === 'string')).toEqual([
      'curl',
      '-d',
      '{"a":7,"b":"x y"}',
      '/api/p',
      'jq',
      '-c',
      '.data[] | {a}',
    ])
    expect(words.length).toBe(8) // and the pipe
    expect(() => shellWords('echo $MISSING', {})).toThrow(/MISSING/)
  })

  it('refuses a command it does not know, so the guide cannot grow an unchecked step', async () => {
    const env = { origin: 'http://localhost:3001', request: async () => new Response('{}'), token: async () => 't' }
    await expect(runGuide(['rm -rf data\n'], env)).rejects.toThrow(/only curl/)
    await expect(runGuide(['curl -s http://elsewhere/api\n'], env)).rejects.toThrow(/not on/)
  })
})
