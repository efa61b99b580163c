import { and, eq } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { panels } from '../../db/schema.ts'
import { prepareView, ViewDefinitionError } from '../../engine/sof/index.ts'
import { conflict, invalidViewDefinition } from '../../errors.ts'
import type { ColumnRow } from './columns.schemas.ts'

/**
 * A base column that the panel's ViewDefinition defines changes only with the view (409), so the
 * view the panel answers and the columns it has never disagree. The view is the one stored on the
 * panel (PUT /api/panels/{id}/viewdefinition); a panel without one owns all its columns.
 */
export async function assertNotViewColumn(ctx: ServiceContext, column: Pick<ColumnRow, 'panelId' | 'name' | 'columnType'>) {
  if (column.columnType !== 'base') return
  const [panel] = await ctx.db
    .select({ definition: panels.viewDefinition })
    .from(panels)
    .where(and(eq(panels.id, column.panelId), eq(panels.tenantId, ctx.scope.tenantId)))
  if (!panel?.definition) return
  if ((await viewColumnNames(panel.definition)).includes(column.name)) {
    throw conflict(
      `Column "${column.name}" is defined by the panel's ViewDefinition: change it with PUT /api/panels/${column.panelId}/viewdefinition`,
    )
  }
}

async function viewColumnNames(definition: Record<string, unknown>): Promise<string[]> {
  try {
    return (await prepareView(definition)).columns.map((c) => c.name)
  } catch (err) {
    throw err instanceof ViewDefinitionError ? invalidViewDefinition(err.issues) : err
  }
}
