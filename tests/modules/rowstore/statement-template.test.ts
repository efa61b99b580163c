import { sql } from 'drizzle-orm'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { describe, expect, it } from 'vitest'
import { fillTemplate, makeTemplate } from '../../../src/rowstore/statement-template.ts'

const dialect = new SQLiteSyncDialect()
const markers: [Record<'token' | 'at', string>, Record<'token' | 'at', string>] = [
  { token: 'marker-token-a', at: '2001-01-01T00:00:00.000Z' },
  { token: 'marker-token-b', at: '2002-02-02T00:00:00.000Z' },
]
const query = (statements: ReturnType<typeof fillTemplate>) => statements.map((s) => dialect.sqlToQuery(s))

describe('statement templates', () => {
  it('fill in to the very statements a fresh build makes', () => {
    const build = (w: { token: string; at: string }) => [
      sql`INSERT INTO t (a, b, c) SELECT ${w.token}, ${42}, ${'x'} WHERE ${sql`y = ${w.at} AND z IN (${sql.join(
        [1, 2].map((n) => sql`${n}`),
        sql`, `,
      )})`}`,
      sql`DELETE FROM t WHERE token = ${w.token}`,
      sql`SELECT 1`,
    ]
    const template = makeTemplate(build, markers)
    expect(template).toBeDefined()
    for (const write of [
      { token: 'abc', at: '2026-11-27T10:00:00.000Z' },
      { token: "it's ? a token", at: 'x' },
    ]) {
      expect(query(fillTemplate(template!, write))).toEqual(query(build(write)))
    }
  })

  it('is refused when a value is computed from a slot, or the text changes with it', () => {
    expect(makeTemplate((w) => [sql`SELECT ${w.at.slice(0, 4)}`], markers)).toBeUndefined()
    // A value computed from a slot that comes out the same for both markers is not told apart:
    // callers template only builds that pass their varying values through as they are.
    expect(makeTemplate((w) => [sql`SELECT ${new Date(w.at).getTime() > 0}`], markers)).toBeDefined()
    expect(makeTemplate((w) => [sql.raw(`SELECT '${w.token}'`)], markers)).toBeUndefined()
    expect(
      makeTemplate((w) => (w.token.endsWith('a') ? [sql`SELECT 1`] : [sql`SELECT 1`, sql`SELECT 2`]), markers),
    ).toBeUndefined()
    expect(
      makeTemplate(() => {
        throw new Error('cannot build')
      }, markers),
    ).toBeUndefined()
  })

  it('is refused when the text holds a question mark of its own', () => {
    expect(makeTemplate((w) => [sql`SELECT '?' || ${w.token}`], markers)).toBeUndefined()
  })
})
