/**
 * How `npm test` splits the suite (vitest.config.ts). Most files share their vitest worker's module
 * cache (`isolate: false`): the app and its dependencies load once per worker instead of once per
 * file, which was most of the suite's time. The files below run each in a fresh process instead:
 *
 * - files that patch what the whole process shares (spies on node modules, `crypto` or the FHIRPath
 *   package, fake timers, `process.on` handlers, module resets), so nothing they do can reach another
 *   file even when a test fails halfway;
 * - files that spawn processes (the Node entry, the scripts, redis-server). They need no isolation,
 *   but the isolated project sorts first, so their long waits on child processes start at once and
 *   overlap the rest instead of trailing at the end.
 *
 * tests/helpers/projects.test.ts fails when a file does one of the patching things and is not listed.
 */
export const ISOLATED = [
  // Patches process-wide state.
  'tests/lib/formats/xlsx.test.ts',
  'tests/engine/formula/fhirpath.test.ts',
  'tests/modules/datasources/datasources.webhooks.test.ts',
  'tests/modules/rows/rows.fhirpath-engine.test.ts',
  'tests/process/buffered-stdout.test.ts',
  'tests/modules/work/time.test.ts',
  // Spawns processes.
  'tests/cache/cache.test.ts',
  'tests/process/node-entry.test.ts',
  'tests/scripts/migrate.test.ts',
  'tests/scripts/token.test.ts',
]
