import { sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { tooCostly } from '../../errors.ts'
import { readRowsPage } from '../../rowstore/member-page.ts'
import { loadPanelColumns } from '../../rowstore/query/columns.ts'
import { loadWorkflow } from '../../rowstore/workflow.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { patientOfRow } from '../fhir-topic/fhir.patient.ts'
import { prepareViewRows } from '../views/views.query.ts'
import { rowLimitsFor } from '../views/views.rows-scope.ts'
import { toViewDto } from '../views/views.schemas.ts'
import { listViews, loadVisibleView, requireViewPermission } from '../views/views.service.ts'
import { type GroupSearch, nameMatches } from './group.search.ts'

/**
 * Patient lists as FHIR `Group` (docs/fhir.md "Patient lists"): each view the caller may read is a
 * Group whose members are the view's rows' patients, in the view's order, paged from its stored
 * members (rowstore/member-page.ts) like the rows endpoint's pages. The sharing rules, the view
 * password and the read audit are those of `GET /api/views/{id}/rows`.
 */

/** Rows a Group read answers at most; a longer list is read with `$getpage`. */
export const MEMBER_INLINE_CAP = 10_000
/** Members of a `$getpage` page by default, and at most (the read's cap). */
export const PAGE_COUNT_DEFAULT = 1000

/** The extensions the face defines, under its own base (`…/fhir/StructureDefinition/<name>`). */
export const EXTENSION = {
  /** A row of the list without a patient: sub-extensions `key` (valueString) and `row` (valueInteger, the row's `_id`). */
  rowWithoutPatient: 'row-without-patient',
  /** On a `$getpage` Group: the `$getpage` URL of the next page (valueUrl), while rows follow. */
  nextMembers: 'members-next-page',
  /** On a `$getpage` Group past the first page: the `$getpage` URL of the previous page (valueUrl). */
  previousMembers: 'members-previous-page',
} as const

export const extensionUrl = (base: string, name: string) => `${base}/StructureDefinition/${name}`

/** The meta tag FHIR gives a resource answered with some of its elements left out (R4 3.1.1.5.7). */
const SUBSETTED = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED', display: 'subsetted' }

export interface FhirGroup {
  resourceType: 'Group'
  id: string
  meta: { lastUpdated?: string; tag?: (typeof SUBSETTED)[] }
  extension?: unknown[]
  type: 'person'
  actual: true
  name: string
  quantity?: number
  member?: { entity: { reference: string } }[]
}

// --- Search ---

export interface GroupMatches {
  total: number
  groups: FhirGroup[]
}

/**
 * The views the caller may read (the rule of GET /api/views: their own, and the tenant's published
 * ones that do not keep them out by group or expiry), matched by name, in view id order, one page
 * of them as Groups without members. `quantity` is the view's stored member count; a view whose
 * query no longer compiles has none, and no `quantity`.
 */
export async function searchGroups(ctx: ServiceContext, search: GroupSearch): Promise<GroupMatches> {
  const { views } = await listViews(ctx, {})
  const matched = search.typeMatches
    ? views.filter((v) => search.names.every((n) => nameMatches(v.name, n))).sort((a, b) => a.id - b.id)
    : []
  const page = search.countOnly ? [] : matched.slice(search.offset, search.offset + search.count)
  if (page.length === 0) return { total: matched.length, groups: [] }
  const counts = await ctx.db.all<{ id: number; member_count: number | null }>(
    sql`SELECT id, member_count FROM views WHERE tenant_id = ${ctx.scope.tenantId}
      AND id IN (SELECT value FROM json_each(${JSON.stringify(page.map((v) => v.id))}))`,
  )
  const countOf = new Map(counts.map((c) => [Number(c.id), c.member_count === null ? undefined : Number(c.member_count)]))
  const groups = page.map(
    (v): FhirGroup => ({
      resourceType: 'Group',
      id: String(v.id),
      meta: { lastUpdated: v.updatedAt, tag: [SUBSETTED] },
      type: 'person',
      actual: true,
      name: v.name,
      ...(countOf.get(v.id) === undefined ? {} : { quantity: countOf.get(v.id) }),
    }),
  )
  return { total: matched.length, groups }
}

// --- Read and $getpage ---

export interface GroupPage {
  group: FhirGroup
  /** Rows of the view (the Group's quantity). */
  total: number
  offset: number
  count: number
  /** Rows this page answered (members and rows without a patient together). */
  answered: number
}

/**
 * The Group of view `viewId` with the members of rows `offset` … `offset + count - 1` in the view's
 * order. A row without a patient takes its place in the page under the `row-without-patient`
 * extension, so members and those rows together are the page's rows. A view the caller may not
 * read is a 404 (another tenant's too); a password-protected one asks for its password.
 */
export async function readGroupPage(
  ctx: ServiceContext,
  viewId: number,
  offset: number,
  count: number,
  base: string,
): Promise<GroupPage> {
  const view = await loadVisibleView(ctx, viewId)
  noteAccess(ctx, { panelId: view.row.panelId, viewId: view.row.id })
  requireViewPermission(view, 'read', 'read its members')
  const prepared = await prepareViewRows(ctx, view.row, {}, await rowLimitsFor(ctx, view))
  const patientColumn = await patientColumnOf(ctx, view.row.panelId)
  // Only the patient column is read out of each row; the page keeps the view's order, and comes
  // from its stored members when they answer (groups and aggregations are no part of a Group).
  const page = await readRowsPage(
    ctx,
    { ...prepared, visible: patientColumn ? [patientColumn] : [], groupBy: [], aggregations: [] },
    offset,
    count,
  )
  noteAccess(ctx, { rowCount: page.rows.length })
  const members: { entity: { reference: string } }[] = []
  const without: unknown[] = []
  for (const row of page.rows) {
    const reference = patientOfRow(row._key, patientColumn !== undefined, patientColumn ? row[patientColumn.name] : undefined)
    if (reference) members.push({ entity: { reference } })
    else
      without.push({
        url: extensionUrl(base, EXTENSION.rowWithoutPatient),
        extension: [
          { url: 'key', valueString: row._key },
          { url: 'row', valueInteger: row._id },
        ],
      })
  }
  const shown = toViewDto(view.row, view.panel, view.access)
  const group: FhirGroup = {
    resourceType: 'Group',
    id: String(view.row.id),
    meta: { lastUpdated: view.row.updatedAt },
    ...(without.length > 0 ? { extension: without } : {}),
    type: 'person',
    actual: true,
    name: shown.name,
    quantity: page.total,
    ...(members.length > 0 ? { member: members } : {}),
  }
  return { group, total: page.total, offset, count, answered: page.rows.length }
}

/** The panel's workflow patient column, when it names one the panel still has. */
async function patientColumnOf(ctx: ServiceContext, panelId: number) {
  const name = (await loadWorkflow(ctx, panelId))?.patientReference
  if (!name) return undefined
  return (await loadPanelColumns(ctx, panelId)).byName(name)
}

/**
 * The Group read: the whole list, when it has at most `cap` rows (MEMBER_INLINE_CAP). A longer one
 * is not answered in part (Argonaut Patient Lists: a read SHOULD NOT answer a first page): it is a
 * 400 `too-costly` naming the list's size and the `$getpage` URL of its first page.
 */
export async function readGroup(ctx: ServiceContext, viewId: number, base: string, cap = MEMBER_INLINE_CAP): Promise<FhirGroup> {
  const page = await readGroupPage(ctx, viewId, 0, cap, base)
  if (page.answered >= page.total) return page.group
  const first = getPageUrl(base, viewId, 0, cap)
  throw tooCostly(
    `Group ${viewId} has ${page.total} rows, more than the ${cap} a read answers: page it with $getpage (${first})`,
    { quantity: page.total, getpage: first },
  )
}

/**
 * A `$getpage` answer (Argonaut Patient Lists: the operation returns the Group): the page's Group,
 * tagged SUBSETTED unless the page holds the whole list, with the `$getpage` URLs of the next and
 * previous pages as extensions (a Group has no `link`).
 */
export function getPageGroup(page: GroupPage, base: string): FhirGroup {
  const id = Number(page.group.id)
  const links: { url: string; valueUrl: string }[] = []
  if (page.offset + page.count < page.total) {
    links.push({
      url: extensionUrl(base, EXTENSION.nextMembers),
      valueUrl: getPageUrl(base, id, page.offset + page.count, page.count),
    })
  }
  if (page.offset > 0) {
    links.push({
      url: extensionUrl(base, EXTENSION.previousMembers),
      valueUrl: getPageUrl(base, id, Math.max(0, page.offset - page.count), page.count),
    })
  }
  const whole = page.offset === 0 && page.answered >= page.total
  const extension = [...(page.group.extension ?? []), ...links]
  return {
    ...page.group,
    meta: whole ? page.group.meta : { ...page.group.meta, tag: [SUBSETTED] },
    ...(extension.length > 0 ? { extension } : {}),
  }
}

export const getPageUrl = (base: string, viewId: number, offset: number, count: number) =>
  `${base}/Group/${viewId}/$getpage?offset=${offset}&count=${count}`
