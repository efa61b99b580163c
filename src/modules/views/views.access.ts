import type { Scope } from '../../context.ts'

/**
 * Who may see a view and what they may do with it (docs/view-sharing.md, issue 12). Pure: the rules
 * read the view's row, the caller's scope (user, admin role, groups) and the time; the services
 * enforce them on every route that touches a view.
 *
 * - The owner and the tenant's admins see the view and may do everything, published or not.
 * - Anyone else sees it only while it is published, not past its `expiresAt`, and — when its
 *   `userGroups` is not empty — only when they share a group. Otherwise it is exactly as if
 *   unpublished: a 404, absent from lists, no notifications.
 * - A user who sees it may do what its `permissions` list (read, edit, create, delete, manage);
 *   `allowDownload: false` takes exports away from `read`.
 */

export const VIEW_PERMISSIONS = ['read', 'edit', 'create', 'delete', 'manage'] as const
export type ViewPermission = (typeof VIEW_PERMISSIONS)[number]

/** The publish settings the rules read (spec §2.7 PublishConfig), as stored. */
export interface StoredPublishConfig {
  permissions?: string[]
  userGroups?: string[]
  expiresAt?: string
  passwordProtected?: boolean
  /** PBKDF2 hash of the password given at publish (views.password.ts); never answered. */
  passwordHash?: string
  allowDownload?: boolean
  /** Readers may comment on the view's rows (docs/worklist.md "Comments"). */
  allowComments?: boolean
  isDefault?: boolean
  publishedTitle?: string
  description?: string
  [key: string]: unknown
}

/** The view fields the rules read. */
export interface ViewSharing {
  userId: string
  isPublished: boolean
  publishConfig: Record<string, unknown> | null
}

export interface ViewAccess {
  /** The view exists for the caller (else: 404, as if it did not). */
  visible: boolean
  /** Owner or tenant admin: every permission, no password. */
  full: boolean
  permissions: ReadonlySet<ViewPermission>
  /** The caller must give the view's password (X-View-Password) before anything but listing. */
  needsPassword: boolean
  /** May export (read, and the publisher did not turn downloads off). */
  canDownload: boolean
}

const ALL = new Set<ViewPermission>(VIEW_PERMISSIONS)
const NONE = new Set<ViewPermission>()

export const publishConfigOf = (view: Pick<ViewSharing, 'publishConfig'>): StoredPublishConfig =>
  (view.publishConfig ?? {}) as StoredPublishConfig

/** Published and not past its `expiresAt` at `now`. */
export function isLive(view: ViewSharing, now: Date): boolean {
  if (!view.isPublished) return false
  const expiresAt = publishConfigOf(view).expiresAt
  return expiresAt === undefined || new Date(expiresAt).getTime() > now.getTime()
}

/** True when the view names groups and the caller is in none of them. */
export function outsideGroups(view: ViewSharing, groups: readonly string[]): boolean {
  const wanted = publishConfigOf(view).userGroups ?? []
  return wanted.length > 0 && !wanted.some((g) => groups.includes(g))
}

export function viewAccess(view: ViewSharing, scope: Scope, now: Date): ViewAccess {
  if (scope.isAdmin || view.userId === scope.userId) {
    return { visible: true, full: true, permissions: ALL, needsPassword: false, canDownload: true }
  }
  if (!isLive(view, now) || outsideGroups(view, scope.groups)) {
    return { visible: false, full: false, permissions: NONE, needsPassword: false, canDownload: false }
  }
  const config = publishConfigOf(view)
  const permissions = new Set((config.permissions ?? ['read']).filter((p): p is ViewPermission => ALL.has(p as ViewPermission)))
  return {
    visible: true,
    full: false,
    permissions,
    needsPassword: config.passwordProtected === true,
    canDownload: permissions.has('read') && config.allowDownload !== false,
  }
}
