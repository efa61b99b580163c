import { createClient, type InValue } from '@libsql/client'

/**
 * The bare baseline of `bench:views` (issue 22 item 4): the bench's panel as a plain SQLite table,
 * one typed column per panel column, in a libSQL file of its own opened as the service opens its
 * database, with indexes that match the bench's views. It answers the same view page (count and
 * 50 rows) and the same grouped view (first 50 rows, overall and per-group aggregations) straight
 * in SQL: what the database can do with the data laid out for the query, the floor the service is
 * measured against.
 *
 * Text columns are `COLLATE NOCASE`, as the service compares, sorts and groups texts; every column
 * is `NOT NULL` (the generated rows have no blanks), so blanks need no sort term of their own.
 */

/** One row of the bare table, in the column order of `COLUMNS`. */
export type BareRow = [
  id: number,
  key: string,
  family: string,
  given: string,
  gender: string,
  birthDate: string,
  city: string,
  postalCode: string,
  active: number,
  age: number,
  name: string,
  senior: number,
]

const COLUMNS = 'id, key, family, given, gender, birth_date, city, postal_code, active, age, name, senior'

const SCHEMA = [
  `CREATE TABLE p (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    family TEXT NOT NULL COLLATE NOCASE,
    given TEXT NOT NULL COLLATE NOCASE,
    gender TEXT NOT NULL COLLATE NOCASE,
    birth_date TEXT NOT NULL,
    city TEXT NOT NULL COLLATE NOCASE,
    postal_code TEXT NOT NULL COLLATE NOCASE,
    active INTEGER NOT NULL,
    age INTEGER NOT NULL,
    name TEXT NOT NULL COLLATE NOCASE,
    senior INTEGER NOT NULL
  )`,
]

/**
 * Built after the rows are in (one sort each instead of random inserts):
 * - `p_sort`: the page's equality filter, its sort keys and the id that breaks ties, so the page is
 *   read in order from the index, then the age, so the age filter is tested on the index entry:
 *   the youngest of each family come first in `Birth Date` desc order and fail it, and without the
 *   age in the index each of them costs a table read (0.7 against 4.4 ms at 100k rows);
 * - `p_count`: the page's two filters, a covering range search for the total;
 * - `p_city`: the grouped view's rows in (City, id) order;
 * - `p_group`: City with the aggregated columns, covering the per-group and overall aggregations.
 */
const INDEXES = [
  'CREATE INDEX p_sort ON p (gender, family, birth_date DESC, id, age)',
  'CREATE INDEX p_count ON p (gender, age)',
  'CREATE INDEX p_city ON p (city)',
  'CREATE INDEX p_group ON p (city, family, age)',
]

/**
 * The page's filters (`Gender = female`, `Age ≥ 40`) and sort (`Family` asc, `Birth Date` desc, then
 * id). `INDEXED BY`: left to itself (with or without ANALYZE) the planner takes the range search of
 * `p_count` and sorts every match in a temporary B-tree (15–40 ms at 100k rows, against 0.7 ms in
 * order from `p_sort`), since it cannot tell that three in four rows pass the age filter.
 */
const PAGE_SQL = `SELECT ${COLUMNS} FROM p INDEXED BY p_sort WHERE gender = ? AND age >= ?
  ORDER BY family, birth_date DESC, id LIMIT ? OFFSET ?`
const COUNT_SQL = 'SELECT count(*) AS n FROM p WHERE gender = ? AND age >= ?'
/** The grouped view (by City; average and max of Age, distinct Family): its first rows, overall and per group. */
const GROUP_PAGE_SQL = `SELECT ${COLUMNS} FROM p ORDER BY city, id LIMIT ? OFFSET ?`
const OVERALL_SQL = 'SELECT count(*) AS n, avg(age) AS a0, max(age) AS a1, count(DISTINCT family) AS a2 FROM p'
const GROUPS_SQL = `SELECT city AS g0, count(*) AS n, avg(age) AS a0, max(age) AS a1, count(DISTINCT family) AS a2
  FROM p GROUP BY city ORDER BY city LIMIT 1000`
const INSERT_SQL = (rows: number) =>
  `INSERT INTO p (${COLUMNS}) VALUES ${Array.from({ length: rows }, () => `(${'?, '.repeat(11)}?)`).join(', ')}`
const UPSERT_SQL = (rows: number) =>
  `${INSERT_SQL(rows)} ON CONFLICT (id) DO UPDATE SET family = excluded.family, name = excluded.name`

export interface BarePage {
  rows: Record<string, unknown>[]
  total: number
}

export interface BareGroups {
  rows: Record<string, unknown>[]
  overall: Record<string, unknown>
  groups: Record<string, unknown>[]
}

export interface BarePanel {
  /** Adds rows (in one transaction); indexes are built by `index()`. */
  insert(rows: BareRow[]): Promise<void>
  /** Builds the indexes, once every row is in. */
  index(): Promise<void>
  /** The view page at `offset`: its total and `limit` rows. */
  page(offset: number, limit: number, gender: string, minAge: number): Promise<BarePage>
  /** The grouped view: its first `limit` rows, the overall aggregations and the groups. */
  grouped(limit: number): Promise<BareGroups>
  /** Inserts or updates (family and name) a few rows: the small write before a "first page after a write". */
  upsert(rows: BareRow[]): Promise<void>
  /** `EXPLAIN QUERY PLAN` of each statement, as printed lines. */
  plans(gender: string, minAge: number): Promise<string[]>
  close(): void
}

/**
 * Opens the bare database at `file` with the service's file settings (src/runtime/node-primitives.ts
 * `openDatabase`: one connection, the busy timeout, WAL, synchronous NORMAL, the checkpoint interval
 * and page cache) and creates its table.
 */
export async function openBarePanel(file: string): Promise<BarePanel> {
  const client = createClient({ url: `file:${file}`, concurrency: 1, timeout: 5000 })
  for (const pragma of [
    'PRAGMA journal_mode = WAL',
    'PRAGMA synchronous = NORMAL',
    'PRAGMA wal_autocheckpoint = 4000',
    'PRAGMA cache_size = -8192',
    'PRAGMA foreign_keys = ON',
  ]) {
    await client.execute(pragma)
  }
  for (const ddl of SCHEMA) await client.execute(ddl)
  const write = (rows: BareRow[], sqlOf: (n: number) => string) => {
    const statements = []
    for (let i = 0; i < rows.length; i += INSERT_ROWS) {
      const chunk = rows.slice(i, i + INSERT_ROWS)
      statements.push({ sql: sqlOf(chunk.length), args: chunk.flat() as InValue[] })
    }
    return client.batch(statements, 'write')
  }
  return {
    insert: async (rows) => {
      await write(rows, INSERT_SQL)
    },
    index: async () => {
      for (const ddl of INDEXES) await client.execute(ddl)
    },
    page: async (offset, limit, gender, minAge) => {
      const total = await client.execute({ sql: COUNT_SQL, args: [gender, minAge] })
      const rows = await client.execute({ sql: PAGE_SQL, args: [gender, minAge, limit, offset] })
      return { rows: rows.rows as unknown as Record<string, unknown>[], total: Number(total.rows[0].n) }
    },
    grouped: async (limit) => {
      const rows = await client.execute({ sql: GROUP_PAGE_SQL, args: [limit, 0] })
      const overall = await client.execute(OVERALL_SQL)
      const groups = await client.execute(GROUPS_SQL)
      return {
        rows: rows.rows as unknown as Record<string, unknown>[],
        overall: overall.rows[0] as unknown as Record<string, unknown>,
        groups: groups.rows as unknown as Record<string, unknown>[],
      }
    },
    upsert: async (rows) => {
      await write(rows, UPSERT_SQL)
    },
    plans: async (gender, minAge) => {
      const statements: [string, string, InValue[]][] = [
        ['view page', PAGE_SQL, [gender, minAge, 50, 50]],
        ['view page total', COUNT_SQL, [gender, minAge]],
        ['grouped view rows', GROUP_PAGE_SQL, [50, 0]],
        ['grouped view overall aggregations', OVERALL_SQL, []],
        ['grouped view groups', GROUPS_SQL, []],
      ]
      const lines: string[] = []
      for (const [name, sql, args] of statements) {
        const plan = await client.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args })
        lines.push(`${name}:`)
        for (const step of plan.rows) lines.push(`  ${' '.repeat(depth(plan.rows, step))}${String(step.detail)}`)
      }
      return lines
    },
    close: () => client.close(),
  }
}

/** Rows per multi-row INSERT (12 parameters each, well under SQLite's 32,766). */
const INSERT_ROWS = 500

/** Indentation of a plan step: two spaces per ancestor (EXPLAIN QUERY PLAN rows carry id and parent). */
function depth(steps: Record<string, unknown>[], step: Record<string, unknown>): number {
  let n = 0
  let parent = Number(step.parent)
  while (parent !== 0) {
    const up = steps.find((s) => Number(s.id) === parent)
    if (!up) break
    n += 2
    parent = Number(up.parent)
  }
  return n
}

/** Whole years from an ISO birth date to `today` (UTC), as the formula `AGE({Birth Date})` counts them. */
export function wholeYears(birthDate: string, today: Date): number {
  const [y, m, d] = birthDate.split('-').map(Number)
  const years = today.getUTCFullYear() - y
  const month = today.getUTCMonth() + 1
  return month < m || (month === m && today.getUTCDate() < d) ? years - 1 : years
}

/** The bare row of a generated FHIR Patient (bench/lib/fhir-patients.ts), as the bench's columns read it. */
export function bareRowOf(
  id: number,
  p: {
    id: string
    active: boolean
    name: { family: string; given: string[] }[]
    gender: string
    birthDate: string
    address: { city: string; postalCode: string }[]
  },
  today: Date,
): BareRow {
  const family = p.name[0].family
  const given = p.name[0].given[0]
  const age = wholeYears(p.birthDate, today)
  return [
    id,
    p.id,
    family,
    given,
    p.gender,
    p.birthDate,
    p.address[0].city,
    p.address[0].postalCode,
    p.active ? 1 : 0,
    age,
    `${given} ${family}`,
    age >= 65 ? 1 : 0,
  ]
}
