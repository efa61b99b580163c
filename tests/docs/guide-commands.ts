/**
 * Runs the shell commands of a guide's ```sh blocks against the app, as a reader would paste them:
 * variable assignments, `$(npm run -s token …)`, heredoc files, and curl calls (with their
 * `| jq …` tails read only for `-r .id`). A command of any other form fails the run, so a guide
 * cannot grow a step that this runner skips.
 */

export interface CurlCall {
  method: string
  path: string
  headers: Record<string, string>
  status: number
  text: string
  /** The line of the guide, for messages. */
  command: string
}

export interface GuideEnvironment {
  /** Answers one request the way the service would (the app's `request`). */
  request(path: string, init: RequestInit): Promise<Response>
  /** A token for `npm run -s token -- --tenant T --user U`. */
  token(tenant: string, user: string): Promise<string>
  /** The origin the guide's URLs name, stripped to reach the app. */
  origin: string
}

export interface GuideRun {
  calls: CurlCall[]
  vars: Record<string, string>
  files: Record<string, string>
}

/** The ```sh blocks of a markdown page, in order. */
export const shellBlocks = (markdown: string) => [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1])

/** The ```<lang> block that follows the first line containing `marker`. */
export function blockAfter(markdown: string, marker: string, lang = 'text'): string {
  const at = markdown.indexOf(marker)
  if (at < 0) throw new Error(`no "${marker}" in the guide`)
  const match = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(markdown.slice(at))
  if (!match) throw new Error(`no ${lang} block after "${marker}"`)
  return match[1]
}

const PIPE = Symbol('pipe')
type Word = string | typeof PIPE

/** Splits a command into words as a POSIX shell would for these forms: quotes, $VAR, ${VAR}, `|`. */
export function shellWords(line: string, vars: Record<string, string>): Word[] {
  const words: Word[] = []
  let word: string | undefined
  const add = (s: string) => {
    word = (word ?? '') + s
  }
  const expand = (s: string) =>
    s.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => {
      if (!(name in vars)) throw new Error(`$${name} is used before it is set: ${line}`)
      return vars[name]
    })
  let i = 0
  while (i < line.length) {
    const c = line[i]
    if (c === "'") {
      const end = line.indexOf("'", i + 1)
      if (end < 0) throw new Error(`unclosed ' in: ${line}`)
      add(line.slice(i + 1, end))
      i = end + 1
    } else if (c === '"') {
      let j = i + 1
      let raw = ''
      while (j < line.length && line[j] !== '"') {
        if (line[j] === '\\' && '"\\$'.includes(line[j + 1])) {
          raw += line[j + 1] === '$' ? '\u0000' : line[j + 1]
          j += 2
        } else raw += line[j++]
      }
      if (j >= line.length) throw new Error(`unclosed " in: ${line}`)
      add(expand(raw).replaceAll('\u0000', '$'))
      i = j + 1
    } else if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word)
      word = undefined
      i++
    } else if (c === '|') {
      if (word !== undefined) words.push(word)
      word = undefined
      words.push(PIPE)
      i++
    } else {
      let j = i
      while (j < line.length && !` \t'"|`.includes(line[j])) j++
      add(expand(line.slice(i, j)))
      i = j
    }
  }
  if (word !== undefined) words.push(word)
  return words
}

/** The commands of the blocks: continuation lines joined, heredocs kept whole. */
function commandsOf(blocks: string[]): string[] {
  const commands: string[] = []
  for (const block of blocks) {
    const lines = block.replace(/\\\n\s*/g, ' ').split('\n')
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].trim()
      if (!line || line.startsWith('#')) continue
      const heredoc = /^cat > (\S+) <<'(\w+)'$/.exec(line)
      if (heredoc) {
        const end = lines.indexOf(heredoc[2], i + 1)
        if (end < 0) throw new Error(`heredoc ${heredoc[2]} is not closed`)
        commands.push([line, ...lines.slice(i + 1, end)].join('\n'))
        i = end
      } else commands.push(line)
    }
  }
  return commands
}

/** Runs every command of the blocks in order. */
export async function runGuide(blocks: string[], env: GuideEnvironment): Promise<GuideRun> {
  const run: GuideRun = { calls: [], vars: {}, files: {} }

  const curl = async (words: string[], command: string): Promise<CurlCall> => {
    const headers: Record<string, string> = {}
    let method: string | undefined
    let body: string | undefined
    let url: string | undefined
    let output: string | undefined
    for (let i = 1; i < words.length; i++) {
      const w = words[i]
      if (w === '-s') continue
      if (w === '-X') method = words[++i]
      else if (w === '-H') {
        const h = words[++i]
        const colon = h.indexOf(':')
        headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim()
      } else if (w === '-d') body = words[++i]
      else if (w === '--data-binary') {
        const name = words[++i].replace(/^@/, '')
        if (!(name in run.files)) throw new Error(`${name} was not written before: ${command}`)
        body = run.files[name]
      } else if (w === '-o') output = words[++i]
      else if (w.startsWith('-')) throw new Error(`curl option ${w} is not supported here: ${command}`)
      else url = w
    }
    if (!url?.startsWith(env.origin)) throw new Error(`the URL is not on ${env.origin}: ${command}`)
    const path = url.slice(env.origin.length)
    const m = method ?? (body === undefined ? 'GET' : 'POST')
    const res = await env.request(path, { method: m, headers, body })
    const call = { method: m, path, headers, status: res.status, text: await res.text(), command }
    if (output) run.files[output] = call.text
    run.calls.push(call)
    return call
  }

  /** A pipeline: curl, then at most a jq; answers what `jq -r .id` would print, else the body. */
  const pipeline = async (words: Word[], command: string): Promise<string> => {
    const cut = words.indexOf(PIPE)
    const first = (cut < 0 ? words : words.slice(0, cut)) as string[]
    const rest = cut < 0 ? [] : (words.slice(cut + 1) as string[])
    if (first[0] !== 'curl') throw new Error(`only curl commands are run: ${command}`)
    if (rest.length > 0 && rest[0] !== 'jq') throw new Error(`only jq may follow curl: ${command}`)
    const call = await curl(first, command)
    if (rest.join(' ') === 'jq -r .id') return String(JSON.parse(call.text).id)
    return call.text
  }

  for (const command of commandsOf(blocks)) {
    const heredoc = /^cat > (\S+) <<'(\w+)'\n/.exec(command)
    if (heredoc) {
      run.files[heredoc[1]] = `${command.slice(heredoc[0].length)}\n`
      continue
    }
    const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(command)
    if (assignment) {
      const [, name, value] = assignment
      const sub = /^\$\((.*)\)$/.exec(value)
      if (sub) {
        const token = /^npm run -s token -- --tenant (\S+) --user (\S+)$/.exec(sub[1])
        run.vars[name] = token ? await env.token(token[1], token[2]) : await pipeline(shellWords(sub[1], run.vars), command)
      } else {
        const words = shellWords(value, run.vars)
        if (words.length !== 1 || typeof words[0] !== 'string') throw new Error(`not one word: ${command}`)
        run.vars[name] = words[0]
      }
      continue
    }
    const words = shellWords(command, run.vars)
    if (words[0] === 'echo') continue
    if (words[0] === 'head') {
      if (!(String(words.at(-1)) in run.files)) throw new Error(`no file ${String(words.at(-1))}: ${command}`)
      continue
    }
    await pipeline(words, command)
  }
  return run
}
