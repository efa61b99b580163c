/** The error shapes of formulas (spec §2.8, FORMULAS.md "Errors" and "Values and types"). */

export type ExpressionErrorType = 'syntax' | 'reference' | 'type' | 'circular'

/** spec §2.8 ExpressionError; `position` is the 0-based character offset in the formula. */
export interface ExpressionError {
  type: ExpressionErrorType
  message: string
  position?: number
  suggestion?: string
}

/** Run-time error codes of a cell, after Excel's #DIV/0!, #VALUE!, #NUM!, #REF!, #N/A and #NAME?. */
export type CellErrorCode = 'DIV_ZERO' | 'VALUE' | 'NUM' | 'REF' | 'NA' | 'NAME'

export interface CellError {
  code: CellErrorCode
  message: string
}

/** Thrown inside evaluation and caught at the cell (or by IFERROR/ISERROR); never escapes a cell. */
export class FormulaError extends Error {
  constructor(
    readonly code: CellErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'FormulaError'
  }
}

export const fail = (code: CellErrorCode, message: string): never => {
  throw new FormulaError(code, message)
}
