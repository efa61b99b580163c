import type { ExportViewState } from '../../db/schema.ts'
import type { FileStore } from '../../lib/files.ts'

/**
 * Where an export job keeps its files in the file storage (FILES_DIR, or the R2 bucket on Workers):
 * `exports/<job id>/`, holding the input sent inline (`input.ndjson`, until the job ends) and each
 * view's output as numbered parts (`<view>.<part>.<ndjson|csv>`). A part is written whole in one
 * streamed write, so a job that stops (a Worker's time, a restart, a cancel) leaves only whole parts
 * and resumes after the last one it recorded; a download is the view's parts read one after the
 * other as one stream (docs/fhir.md "ViewDefinition export").
 */

export const inputPath = (id: string) => `exports/${id}/input.ndjson`

export const partPath = (id: string, view: number, part: number, format: string) => `exports/${id}/${view}.${part}.${format}`

/** The view's output: its parts, in order, read lazily one at a time as one byte stream. */
export function viewFile(files: FileStore, id: string, view: number, parts: number, format: string): ReadableStream<Uint8Array> {
  let part = 0
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (!reader) {
          if (part >= parts) return controller.close()
          reader = (await files.read(partPath(id, view, part++, format))).getReader()
        }
        const { done, value } = await reader.read()
        if (!done) return controller.enqueue(value)
        reader = undefined
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason)
    },
  })
}

/**
 * Removes every file of a job: the input and each view's parts, one past the recorded count too (a
 * part whose write finished after the job's state last changed). A missing file is not an error.
 */
export async function removeExportFiles(files: FileStore | undefined, id: string, views: ExportViewState[], format: string) {
  if (!files) return
  const paths = [inputPath(id)]
  views.forEach((view, v) => {
    for (let part = 0; part <= view.parts; part++) paths.push(partPath(id, v, part, format))
  })
  for (const path of paths) await files.remove(path)
}
