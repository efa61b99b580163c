import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'

/**
 * Runs `work` under the V8 CPU profiler when `file` is set, writing the profile there (open it in
 * Chrome DevTools or any .cpuprofile viewer): a look at one phase of a bench case alone.
 */
export async function profiled<T>(file: string | undefined, work: () => Promise<T>): Promise<T> {
  if (!file) return work()
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 200 })
  await session.post('Profiler.start')
  try {
    return await work()
  } finally {
    const { profile } = await session.post('Profiler.stop')
    writeFileSync(file, JSON.stringify(profile))
    session.disconnect()
  }
}
