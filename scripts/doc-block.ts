/**
 * Generated blocks in docs/: a script (`npm run docs:sizes`, `npm run bench:start`) owns the text
 * between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`, so figures are never copied by hand.
 */
import { readFileSync, writeFileSync } from 'node:fs'

const markers = (name: string) => [`<!-- generated:${name} -->`, `<!-- /generated:${name} -->`] as const

/** The block's current text (without its markers), or undefined when the file has no such block. */
export function readBlock(file: string, name: string): string | undefined {
  const text = readFileSync(file, 'utf8')
  const [open, close] = markers(name)
  const start = text.indexOf(open)
  const end = text.indexOf(close)
  if (start < 0 || end < start) return undefined
  return text
    .slice(start + open.length, end)
    .replace(/^\n/, '')
    .replace(/\n$/, '')
}

/** Replaces the block's text; the markers must already be in the file (they say where it goes). */
export function writeBlock(file: string, name: string, body: string) {
  const text = readFileSync(file, 'utf8')
  const [open, close] = markers(name)
  const start = text.indexOf(open)
  const end = text.indexOf(close)
  if (start < 0 || end < start) throw new Error(`${file} has no ${open} … ${close} block`)
  writeFileSync(file, `${text.slice(0, start + open.length)}\n${body.trim()}\n${text.slice(end)}`)
}
