import { and, asc, eq } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { columns } from '../../db/schema.ts'
import type { ColumnRow } from './columns.schemas.ts'

/** Every column of a panel (of the caller's tenant), in creation order. */
export const panelColumns = (ctx: ServiceContext, panelId: number): Promise<ColumnRow[]> =>
  ctx.db
    .select()
    .from(columns)
    .where(and(eq(columns.tenantId, ctx.scope.tenantId), eq(columns.panelId, panelId)))
    .orderBy(asc(columns.id))
