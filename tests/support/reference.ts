/**
 * Reference files kept outside the repository (pg_exporter's collector set
 * `pg_exporter-config/` and `docs/reference/pg_exporter-explain-example.txt`).
 *
 * Tests find them in the directory named by the environment variable `HA_REFERENCE_DIR`
 * (`.ci/run` sets it to the `shared` directory beside the repository). Without it, the tests
 * that need these files are skipped (`describe.skipIf(!REFERENCE_DIR)` / `it.skipIf(...)`, with
 * {@link REFERENCE_SKIP} in their name), so `npx vitest run` passes in a fresh clone.
 * Nothing here reads a file or throws at import time.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Name of the environment variable that points at the reference directory. */
export const REFERENCE_ENV = 'HA_REFERENCE_DIR';

function referenceDir(): string | undefined {
  const v = process.env[REFERENCE_ENV]?.trim();
  if (!v) return undefined;
  const dir = resolve(v);
  return existsSync(dir) && statSync(dir).isDirectory() ? dir : undefined;
}

/**
 * Absolute path of the reference directory from `HA_REFERENCE_DIR`; undefined when the variable
 * is unset or empty, or names no existing directory.
 */
export const REFERENCE_DIR: string | undefined = referenceDir();

/**
 * Suffix for the names of tests (or suites) that need the reference directory, so a report that
 * lists them as skipped says why: `it.skipIf(!REFERENCE_DIR)(\`loads … ${REFERENCE_SKIP}\`, …)`.
 */
export const REFERENCE_SKIP = `[needs ${REFERENCE_ENV}: the reference files directory, ../shared in CI]`;

/**
 * A path inside the reference directory, e.g. `referencePath('pg_exporter-config')`. When the
 * directory is not set it returns a path under a placeholder that does not exist (no throw), so
 * it may be computed at import time by a module whose tests are skipped.
 */
export function referencePath(...parts: string[]): string {
  return join(REFERENCE_DIR ?? `/nonexistent-${REFERENCE_ENV}`, ...parts);
}
