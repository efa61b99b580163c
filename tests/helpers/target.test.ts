import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { SKIP } from './target.ts'

// The skip list of the API suite on workerd and Deno is short and documented: every reason of
// tests/helpers/target.ts appears word for word in docs/runtimes.md.
describe('skips per runtime target', () => {
  const docs = readFileSync(new URL('../../docs/runtimes.md', import.meta.url), 'utf8')
  it.each(Object.entries(SKIP))('documents %s in docs/runtimes.md', (_key, reason) => {
    expect(docs).toContain(reason)
  })
})
