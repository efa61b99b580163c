/**
 * Bytes or text that cannot be read as their format (malformed CSV, JSON or XML, an unreadable
 * workbook, a record path that matches nothing, an unknown encoding). The message is safe to show:
 * it names the problem and where, never the content around it. Each caller maps it to its own
 * error: a sync to a FormatError (the source's `errorMessage`), an import to a 400.
 */
export class FormatError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'FormatError'
  }
}
