import type { MiddlewareHandler } from 'hono'
import { authenticate } from './auth.ts'
import { readJsonBody } from './body.ts'
import { type AppEnv, appPath } from './context.ts'
import { countRequest } from './limits.ts'

/** The FHIR face's public reads: a client reads the CapabilityStatement before it has a token. */
const PUBLIC_PATHS = new Set(['/fhir/metadata'])

/**
 * The checks every /fhir request passes, the same as /api's (apiGuard): the bearer token (401),
 * the rate limits (429) and the JSON body (413, 415, 400; `application/fhir+json` is JSON). The
 * error renderer answers them as `OperationOutcome` under /fhir.
 */
export const fhirGuard = (): MiddlewareHandler<AppEnv> =>
  async function fhirGuard(c, next) {
    // Inside the face's router the path is relative to it: the renderer asks this mark instead.
    c.set('fhirFace', true)
    if (!PUBLIC_PATHS.has(appPath(c))) {
      const verifying = authenticate(c)
      if (verifying) await verifying
    }
    countRequest(c)
    const reading = readJsonBody(c)
    if (reading) await reading
    await next()
  }
