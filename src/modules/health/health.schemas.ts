import { z } from '@hono/zod-openapi'
import { Timestamp } from '../../http/router.ts'

export const HealthReport = z
  .object({
    status: z.enum(['healthy', 'degraded', 'unhealthy']).openapi({ example: 'healthy' }),
    timestamp: Timestamp,
    uptime: z.number().openapi({ example: 3600.5, description: 'Seconds since the service started' }),
    database: z.object({
      status: z.enum(['up', 'down']).openapi({ example: 'up' }),
      latencyMs: z.number().openapi({ example: 0.42 }),
    }),
    redis: z.object({
      status: z.enum(['up', 'down', 'not_configured']).openapi({
        example: 'not_configured',
        description: '`not_configured` when the cache is the in-process memory driver (which still answered)',
      }),
      driver: z.enum(['memory', 'redis', 'fs', 'kv']).openapi({ example: 'memory' }),
    }),
  })
  .openapi('HealthReport')

export type HealthReportDto = z.infer<typeof HealthReport>
