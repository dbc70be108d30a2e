/**
 * Vitest global setup of the unit project: builds packages/machines (its dist/, what plain `node`
 * and API Extractor read) when it is missing or older than the package's sources, once before any
 * test file runs, so that no two tests build it at the same time. `npm ci` builds it too
 * (`prepare`); this only catches an edit made since.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** packages/machines of this repository. */
export const MACHINES_PACKAGE = fileURLToPath(new URL('../../packages/machines/', import.meta.url));

/** Newest modification time (ms) of the files under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { recursive: true })) newest = Math.max(newest, statSync(join(dir, String(entry))).mtimeMs);
  return newest;
}

/** True when dist/ is missing or older than src/, tsconfig.json or the build script. */
export function machinesBuildStale(): boolean {
  const built = join(MACHINES_PACKAGE, 'dist/index.js');
  if (!existsSync(built)) return true;
  const inputs = Math.max(
    newestMtime(join(MACHINES_PACKAGE, 'src')),
    statSync(join(MACHINES_PACKAGE, 'tsconfig.json')).mtimeMs,
    statSync(join(MACHINES_PACKAGE, 'scripts/build.mjs')).mtimeMs,
  );
  return statSync(built).mtimeMs < inputs;
}

/** Vitest's global setup hook: build when stale. Throws (with tsc's output) when the build fails. */
export default function setup(): void {
  if (!machinesBuildStale()) return;
  try {
    execFileSync(process.execPath, [join(MACHINES_PACKAGE, 'scripts/build.mjs')], { stdio: 'pipe', timeout: 180_000 });
  } catch (e) {
    const out = e as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`packages/machines does not build:\n${String(out.stdout ?? '')}${String(out.stderr ?? '')}`);
  }
}
