/**
 * The syntax tree of a formula (FORMULAS.md "Syntax"). Every node carries `pos` (0-based offset of
 * its first character) and `end` (offset just past it), so checks can point at the culprit.
 */

export type BinaryOp = '^' | '*' | '/' | '%' | '+' | '-' | '&' | '=' | '!=' | '<>' | '<' | '<=' | '>' | '>='

interface Span {
  pos: number
  end: number
}

export type Node =
  | (Span & { kind: 'number'; value: number })
  | (Span & { kind: 'text'; value: string })
  | (Span & { kind: 'boolean'; value: boolean })
  /** `{Column Name}` */
  | (Span & { kind: 'ref'; name: string })
  /** A dotted chain such as `Patient.birthDate`: a FHIRPath path into the row's source record. */
  | (Span & { kind: 'path'; path: string })
  /** A bare single word that is neither a call nor TRUE/FALSE: always a reference error. */
  | (Span & { kind: 'word'; name: string })
  /** `name` is upper-cased (function names are case-insensitive). */
  | (Span & { kind: 'call'; name: string; args: Node[] })
  | (Span & { kind: 'unary'; op: '-' | '+'; operand: Node })
  | (Span & { kind: 'binary'; op: BinaryOp; left: Node; right: Node; opPos: number })

/** The static types of FORMULAS.md "Values and types"; `any` is unknown until run time. */
export type ValueType = 'number' | 'text' | 'boolean' | 'date' | 'array' | 'any' | 'blank'

/** Every node of the tree, parents before children. */
export function* walk(node: Node): Generator<Node> {
  yield node
  if (node.kind === 'call') for (const arg of node.args) yield* walk(arg)
  else if (node.kind === 'unary') yield* walk(node.operand)
  else if (node.kind === 'binary') {
    yield* walk(node.left)
    yield* walk(node.right)
  }
}
