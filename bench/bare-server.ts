/**
 * The baseline of `npm run bench:api`: Hono on @hono/node-server with one route returning a small
 * JSON, no middleware. Every case of the benchmark is reported as a ratio to this route.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'

const app = new Hono()
app.get('/', (c) => c.json({ id: 1, name: 'bare', ok: true }))

const port = Number(process.env.PORT ?? 3101)
const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => console.log(`bare Hono on 127.0.0.1:${port}`))
const stop = () => server.close(() => process.exit(0))
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
