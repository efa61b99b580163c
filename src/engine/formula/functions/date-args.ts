/** Argument helpers of the date functions. */
import type { DateValue } from '../dates.ts'
import { toDate, type Value } from '../values.ts'

export const DATE: [string, string, string] = ['date', 'date', 'A date or date-time (ISO 8601)']

/** Runs `f` on the parsed dates, or answers blank when one of them is blank. */
export function withDates(values: Value[], f: (...d: DateValue[]) => Value): Value {
  const dates = values.map(toDate)
  return dates.some((d) => d === null) ? null : f(...(dates as DateValue[]))
}
