import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ISOLATED } from '../../vitest.projects.ts'

/**
 * The `shared` project of vitest.config.ts runs many files in one process with one module cache.
 * A file that patches what the process shares must run in the `isolated` project instead
 * (vitest.projects.ts); this finds the ones that do and are not listed there.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** This file, whose examples below would match. */
const SELF = 'tests/helpers/projects.test.ts'

/** What patches process-wide state: vi spies and module mocks, fake timers, stubs, process handlers, env and globals written. */
const PATCHES: [string, RegExp][] = [
  ['vi.spyOn / vi.mock / vi.doMock', /\bvi\.(spyOn|mock|doMock)\(/],
  ['fake timers', /\bvi\.useFakeTimers\(/],
  ['module resets', /\bvi\.resetModules\(/],
  ['stubbed globals or env', /\bvi\.(stubGlobal|stubEnv)\(/],
  ['process handlers or cwd', /\bprocess\.(on|once|addListener|prependListener|chdir)\(/],
  ['process.env written', /\bprocess\.env(\.\w+|\[[^\]]+\])\s*=(?!=)|\bdelete process\.env\b|Object\.assign\(process\.env/],
  ['a global written', /\bglobalThis\.\w+\s*=(?!=)/],
]

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'runtime' || entry.name === 'fixtures' ? [] : testFiles(path)
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path).split('\\').join('/')] : []
  })
}

/** What `source` does that patches process-wide state. */
function patchesIn(source: string): string[] {
  return PATCHES.filter(([, pattern]) => pattern.test(source)).map(([what]) => what)
}

describe('the isolated and shared projects of npm test', () => {
  it('runs every file that patches process-wide state in the isolated project', () => {
    const files = testFiles(join(ROOT, 'tests'))
    expect(files.length).toBeGreaterThan(100)
    const unlisted = files
      .filter((file) => !ISOLATED.includes(file) && file !== SELF)
      .map((file) => ({ file, patches: patchesIn(readFileSync(join(ROOT, file), 'utf8')) }))
      .filter(({ patches }) => patches.length > 0)
    expect(unlisted, 'add these to ISOLATED in vitest.projects.ts').toEqual([])
  })

  it('lists only files that exist', () => {
    expect(ISOLATED.filter((file) => !existsSync(join(ROOT, file)))).toEqual([])
  })

  it('recognises each kind of patch', () => {
    expect(patchesIn("vi.spyOn(fs, 'open')")).toEqual(['vi.spyOn / vi.mock / vi.doMock'])
    expect(patchesIn("vi.mock('../x.ts')")).toEqual(['vi.spyOn / vi.mock / vi.doMock'])
    expect(patchesIn('vi.useFakeTimers()')).toEqual(['fake timers'])
    expect(patchesIn('vi.resetModules()')).toEqual(['module resets'])
    expect(patchesIn("vi.stubEnv('TZ', 'UTC')")).toEqual(['stubbed globals or env'])
    expect(patchesIn("process.on('uncaughtException', f)")).toEqual(['process handlers or cwd'])
    expect(patchesIn("process.env.TZ = 'UTC'")).toEqual(['process.env written'])
    expect(patchesIn("process.env['TZ'] = 'UTC'")).toEqual(['process.env written'])
    expect(patchesIn('globalThis.fetch = fake')).toEqual(['a global written'])
    expect(patchesIn("if (process.env.CI === 'true') vi.fn()")).toEqual([])
    expect(patchesIn('const x = globalThis.fetch === f')).toEqual([])
  })
})
