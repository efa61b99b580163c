import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { FormatError } from './errors.ts'
import { evaluatePath } from './json-path.ts'
import { type ByteSource, readText } from './text.ts'

export const ATTRIBUTE_PREFIX = '@'
/**
 * XML is parsed as a whole document (fast-xml-parser has no streaming mode), so a file XML larger
 * than this is refused with a clear error instead of risking the process's memory.
 */
export const MAX_XML_CHARS = 32 * 1024 * 1024

type Row = Record<string, unknown>

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: ATTRIBUTE_PREFIX,
  textNodeName: '#text',
  parseTagValue: false,
  parseAttributeValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  processEntities: { enabled: true, maxTotalExpansions: 10_000, maxExpandedLength: 1_000_000 },
  htmlEntities: false,
})

const isObject = (v: unknown): v is Row => typeof v === 'object' && v !== null && !Array.isArray(v)
const asRecord = (v: unknown): Row => (isObject(v) ? v : { value: v })
const elementNames = (o: Row) => Object.keys(o).filter((k) => !k.startsWith(ATTRIBUTE_PREFIX) && k !== '#text')

/**
 * The records of an XML document (DATA-ENGINE: Files): the elements at `recordPath` (the JSONPath
 * subset over the parsed document, root element included, e.g. `patients.patient`), else the
 * repeated children of the root element. Attributes are kept with an `@` prefix, an element's
 * text beside attributes as `#text`; values stay text. Malformed XML is a FormatError with its
 * line and column.
 */
export function xmlRecords(text: string, options: { recordPath?: string } = {}): Row[] {
  const valid = XMLValidator.validate(text)
  if (valid !== true) {
    throw new FormatError(`Malformed XML on line ${valid.err.line}, column ${valid.err.col}: ${valid.err.msg}`)
  }
  let doc: Row
  try {
    doc = parser.parse(text) as Row
  } catch (err) {
    throw new FormatError(`XML could not be read: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (options.recordPath) {
    const value = evaluatePath(doc, options.recordPath)
    if (value === undefined) throw new FormatError(`Record path "${options.recordPath}" matches nothing in the XML document`)
    return (Array.isArray(value) ? value : [value]).map(asRecord)
  }
  const roots = elementNames(doc)
  if (roots.length !== 1) throw new FormatError('The XML document has no root element')
  const root = doc[roots[0]]
  if (!isObject(root)) return []
  const children = elementNames(root)
  if (children.length === 0) return []
  const repeated = children.filter((name) => Array.isArray(root[name]))
  const pick = children.length === 1 ? children : repeated
  if (pick.length !== 1) {
    throw new FormatError(
      `The XML root <${roots[0]}> has ${pick.length === 0 ? 'no repeated' : 'several repeated'} child elements (${children.join(', ')}); set jsonPath to the records, e.g. "${roots[0]}.${children[0]}"`,
    )
  }
  const value = root[pick[0]]
  return (Array.isArray(value) ? value : [value]).map(asRecord)
}

/**
 * An XML file's records in batches. The document is read whole up to `maxChars` (default
 * MAX_XML_CHARS); a bigger one is refused, never truncated.
 */
export async function* xmlBatches(
  stream: ByteSource,
  options: { recordPath?: string; batchSize?: number; encoding?: string; signal?: AbortSignal; maxChars?: number } = {},
): AsyncGenerator<Row[]> {
  const maxChars = options.maxChars ?? MAX_XML_CHARS
  const text = await readText(stream, {
    ...options,
    maxChars,
    tooLarge: () =>
      new FormatError(
        `XML files are read whole and this one is larger than ${maxChars / (1024 * 1024)} Mi characters; convert it to CSV or NDJSON`,
      ),
  })
  const records = xmlRecords(text, options)
  const size = options.batchSize ?? 1000
  for (let i = 0; i < records.length; i += size) yield records.slice(i, i + size)
}
