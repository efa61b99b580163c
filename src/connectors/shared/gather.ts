/**
 * Batches of `size` from batches of any size, in order: small pages (an API's or a FHIR server's
 * default page of 20 or 100) gathered so that each write of a sync carries a batch rather than a
 * page, since each write is a transaction with its fixed cost. Only for full reads: what is
 * gathered and not yet yielded when the read fails is never written, which a full sync (its
 * generation dropped whole on a failure) does not miss; an incremental read's cursor must follow
 * each batch it writes.
 */
export async function* gathered<T>(batches: AsyncIterable<T[]>, size: number): AsyncGenerator<T[]> {
  let held: T[] = []
  for await (const batch of batches) {
    held = held.length === 0 ? batch : held.concat(batch)
    while (held.length >= size) {
      yield held.slice(0, size)
      held = held.slice(size)
    }
  }
  if (held.length > 0) yield held
}
