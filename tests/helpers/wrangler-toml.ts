import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * wrangler.toml as deployed, for the tests that start the Workers bundle in Miniflare: they take
 * its settings from there (compatibility date and flags, bindings) rather than copies of them.
 */
export const wranglerToml = readFileSync(join(fileURLToPath(new URL('../..', import.meta.url)), 'wrangler.toml'), 'utf8')

/** A top-level string (`key = "value"`). */
export const tomlString = (key: string) => new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, 'm').exec(wranglerToml)?.[1]

/** A top-level list of strings (`key = ["a", "b"]`). */
export const tomlList = (key: string): string[] =>
  JSON.parse(new RegExp(`^${key}\\s*=\\s*(\\[[^\\]]*\\])`, 'm').exec(wranglerToml)?.[1] ?? '[]')
