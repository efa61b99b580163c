import { fhirPathEngine } from '../fhirpath/engine.ts'

/**
 * Which top-level elements of a resource a view reads, so a run over stored records can read only
 * those (docs/sql-on-fhir.md, "Why peak memory used to grow with the run"). The answer may name more
 * elements than the view needs, never fewer: every member a path at the resource names counts,
 * wherever it stands in the path (`name.where(use = 'official')` counts `name` and `use`), with
 * its primitive-extension sibling (`_birthDate`) and, for a choice element, every typed name
 * (`value` → `valueQuantity`, …). A path that can see the whole resource makes the answer
 * "everything": `$this` at the resource, `%resource`, `%rootResource` and `%context` anywhere,
 * `descendants()` and `children()`, and a member whose name is not a plain identifier.
 */
export class ElementsRead {
  private readonly names = new Set<string>(['resourceType', 'id'])
  private whole = false

  constructor(private readonly resourceType: string) {}

  /** Notes one compiled path; `atResource` when it runs with the resource as its focus. */
  note(expression: string, atResource: boolean): void {
    if (this.whole) return
    let ast: AstNode
    try {
      ast = fhirPathEngine().fhirpath.parse(expression) as AstNode
    } catch {
      // A path the parser refuses is refused by the compile too; until then, read everything.
      this.whole = true
      return
    }
    this.walk(ast, atResource)
  }

  /** The top-level element names, or undefined for the whole resource. */
  elements(): string[] | undefined {
    if (this.whole) return undefined
    const model = fhirPathEngine().r4 as unknown as { choiceTypePaths: Record<string, string[]> }
    const out = new Set<string>()
    for (const name of this.names) {
      const choices = model.choiceTypePaths[`${this.resourceType}.${name}`] ?? []
      for (const n of [name, ...choices.map((type) => name + type[0].toUpperCase() + type.slice(1))]) {
        out.add(n)
        if (n !== 'resourceType') out.add(`_${n}`)
      }
    }
    return [...out].sort()
  }

  private walk(node: AstNode, atResource: boolean): void {
    if (this.whole) return
    switch (node.type) {
      case 'ThisInvocation':
        if (atResource) this.whole = true
        return
      case 'ExternalConstantTerm':
        if (WHOLE_VARIABLES.has(node.delimitedText ?? node.text ?? '')) this.whole = true
        return
      case 'MemberInvocation': {
        if (!atResource) return
        const name = unquote(node.text ?? '')
        if (!IDENTIFIER.test(name)) this.whole = true
        else this.names.add(name)
        return
      }
      case 'FunctionInvocation': {
        const name = node.text
        if (name && WHOLE_FUNCTIONS.has(name)) {
          this.whole = true
          return
        }
        if (atResource && name === 'extension') this.names.add('extension')
        break
      }
    }
    for (const child of node.children ?? []) this.walk(child, atResource)
  }
}

// --- Internal helpers ---

interface AstNode {
  type: string
  text?: string
  /** A delimited name without its backticks (`` %`vs-x` ``). */
  delimitedText?: string
  children?: AstNode[]
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/
const WHOLE_VARIABLES = new Set(['resource', 'rootResource', 'context'])
const WHOLE_FUNCTIONS = new Set(['descendants', 'children'])

const unquote = (text: string) => (text.startsWith('`') && text.endsWith('`') ? text.slice(1, -1) : text)
