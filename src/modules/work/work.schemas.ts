import { z } from '@hono/zod-openapi'
import { positiveId, TenantBody, TenantQuery } from '../../http/router.ts'

/** Request and answer shapes of working the list (docs/worklist.md). */

export const PanelRowParams = z.object({ panelId: positiveId('panelId'), rowId: positiveId('rowId') })
export const ViewRowParams = z.object({ id: positiveId('id'), rowId: positiveId('rowId') })

/** An instant: ISO 8601 with a time zone (`Z` or an offset), answered as UTC with milliseconds. */
const Instant = z.iso.datetime({ offset: true }).openapi({ example: '2026-12-01T09:00:00.000Z' })

/**
 * A user id as an assignee: 1–255 characters, none of them a control character, not padded with
 * spaces (a user id a token could carry; stored and answered exactly as given).
 */
const Assignee = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^\p{Cc}\s](?:[^\p{Cc}]*[^\p{Cc}\s])?$/u, 'a user id: no control characters, no leading or trailing spaces')
  .openapi({ description: 'A user id of the tenant (only yourself without `manage`); null unassigns', example: 'user-456' })

export const WorkState = z
  .object({
    status: z.string().openapi({ example: 'in_progress' }),
    assignee: z.string().nullable().openapi({ example: 'user-456' }),
    claimedAt: z.string().nullable(),
    claimExpiresAt: z.string().nullable().openapi({ description: 'Null with an assignee: held until released' }),
    dueAt: z.string().nullable(),
    snoozedUntil: z.string().nullable(),
    version: z.number().int().openapi({ description: 'The row’s ETag is `"<version>"`', example: 3 }),
    updatedAt: z.string().nullable(),
    updatedBy: z.string().nullable(),
    commentCount: z.number().int(),
  })
  .openapi('WorkState')

export type WorkStateDto = z.infer<typeof WorkState>

export const WorkedRow = z
  .object({
    _id: z.number().int().openapi({ description: 'The row’s lasting id', example: 17 }),
    _key: z.string().openapi({ description: 'The record key of the row’s identity', example: 'Patient/17' }),
    _source: z.number().int(),
    _work: WorkState,
  })
  .catchall(z.unknown())
  .openapi('WorkedRow')

export const WorkPatchBody = z
  .object({
    ...TenantBody,
    status: z.string().min(1).max(100).optional().openapi({ description: 'One of the panel workflow’s statuses' }),
    assignee: Assignee.nullable().optional(),
    dueAt: Instant.nullable().optional(),
    snoozedUntil: Instant.nullable().optional().openapi({ description: 'In the future; null ends a snooze' }),
  })
  .strict()
  .openapi('WorkPatch')

export type WorkPatchInput = z.infer<typeof WorkPatchBody>

export const LeaseBody = z
  .object({
    ...TenantBody,
    leaseSeconds: z.number().int().min(10).max(86_400).optional().openapi({
      description: 'How long the claim holds (10–86,400 s); default: the workflow’s claimLeaseSeconds (null: until released)',
      example: 900,
    }),
  })
  .strict()
  .openapi('ClaimRequest')

export const WorkflowStatus = z.object({
  value: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,50}$/, 'letters, digits, _ . - (1–50)')
    .openapi({ example: 'in_progress' }),
  label: z.string().min(1).max(100).openapi({ example: 'In progress' }),
  done: z.boolean(),
})

export const Workflow = z
  .object({
    statuses: z.array(WorkflowStatus).min(1).max(50),
    sla: z
      .object({
        dueAfter: z
          .string()
          .min(2)
          .max(50)
          .openapi({ description: 'ISO 8601 duration (weeks, days, hours, minutes, seconds)', example: 'PT48H' }),
      })
      .nullable(),
    claimLeaseSeconds: z.number().int().min(10).max(86_400).nullable(),
    patientReference: z.string().min(1).max(255).nullable().openapi({ description: 'The column holding each row’s patient' }),
  })
  .openapi('Workflow')

export const WorkflowBody = Workflow.extend(TenantBody).strict()

export type WorkflowInput = z.infer<typeof WorkflowBody>

export const RowQuery = TenantQuery
