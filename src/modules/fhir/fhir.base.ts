import type { Context } from 'hono'
import { type AppEnv, mountPath } from '../../http/context.ts'

/**
 * The absolute URL of the FHIR face, `…/fhir`: PUBLIC_BASE_URL (the service's address as other
 * servers reach it, a host's mount path included) followed by `/fhir` when set, else the request's
 * own origin and the path the face is mounted at.
 */
export function fhirBase(c: Context<AppEnv>): string {
  const configured = c.get('deps').config.publicBaseUrl
  if (configured) return `${configured}/fhir`
  // Inside the face's router the mount path ends with the face's own `/fhir`.
  const mounted = mountPath(c).replace(/\/fhir$/, '')
  return `${new URL(c.req.url).origin}${mounted}/fhir`
}
