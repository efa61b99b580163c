import type { App } from '../../src/app.ts'
import { authHeaders } from './auth.ts'

/** A small client over `app.request()` acting as one tenant/user with a real token. */
export function clientFor(app: App, tenantId: string, userId: string, extra: { role?: string; groups?: string[] } = {}) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.request(path, {
      method,
      headers: { ...(await authHeaders(tenantId, userId, extra)), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    let json: any = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      json = text
    }
    return { status: res.status, body: json, headers: res.headers }
  }
  return {
    tenantId,
    userId,
    get: (path: string, headers?: Record<string, string>) => call('GET', path, undefined, headers),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => call('POST', path, body, headers),
    put: (path: string, body?: unknown, headers?: Record<string, string>) => call('PUT', path, body, headers),
    patch: (path: string, body?: unknown, headers?: Record<string, string>) => call('PATCH', path, body, headers),
    delete: (path: string, body?: unknown, headers?: Record<string, string>) => call('DELETE', path, body, headers),
  }
}

export type TestClient = ReturnType<typeof clientFor>
