import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'turso',
  schema: [
    './src/db/schema.ts',
    './src/db/schema-records.ts',
    './src/db/schema-access.ts',
    './src/db/schema-live.ts',
    './src/db/schema-work.ts',
  ],
  out: './migrations',
  casing: 'snake_case',
  dbCredentials: {
    url: process.env.DATABASE_URL ?? 'file:./data/panels.db',
    authToken: process.env.DATABASE_AUTH_TOKEN,
  },
})
