import { describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'
import { clientFor } from '../../helpers/http.ts'

// Each test has an app of its own environment (a file of their own: on workers and deno a new
// environment restarts the shared server, which would pull the database from under another file's app).
const URL_OK = 'https://hooks.example.com/panels'

describe('url rules', () => {
  it('refuses loopback and private addresses unless ALLOW_PRIVATE_NETWORK_SOURCES', async () => {
    const strict = await makeTestApp({ env: { ALLOW_PRIVATE_NETWORK_SOURCES: 'false' } })
    const carol = clientFor(strict.app, 'tenant-a', 'carol')
    for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://10.1.2.3/hook', 'http://[::1]/hook']) {
      const res = await carol.post('/api/subscriptions', { url, events: ['*'] })
      expect(res.status, url).toBe(400)
      expect(res.body.details[0].path).toBe('url')
      expect(res.body.details[0].message).toMatch(/not allowed for webhook subscriptions/)
    }
    // A public address literal: accepted without a name to resolve (the Deno server would resolve one).
    expect((await carol.post('/api/subscriptions', { url: 'http://203.0.113.10/x', events: ['*'] })).status).toBe(201)
    const made = await carol.post('/api/subscriptions', { url: 'https://203.0.113.10/hook', events: ['*'] })
    const moved = await carol.put(`/api/subscriptions/${made.body.id}`, { url: 'http://192.168.1.10/hook' })
    expect(moved.status).toBe(400)
    expect(moved.body.details[0].path).toBe('url')
  })

  it('requires https:// in production', async () => {
    const prod = await makeTestApp({ env: { NODE_ENV: 'production' } })
    const carol = clientFor(prod.app, 'tenant-a', 'carol')
    const http = await carol.post('/api/subscriptions', { url: 'http://hooks.example.com/x', events: ['*'] })
    expect(http.status).toBe(400)
    expect(http.body.details).toEqual([{ path: 'url', message: 'must be an https:// URL in production' }])
    expect((await carol.post('/api/subscriptions', { url: URL_OK, events: ['*'] })).status).toBe(201)
  })
})
