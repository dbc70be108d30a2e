/**
 * The project's version (semver) from its package.json, found by walking up from this module, so
 * it works from src/ (tsx) and from a build in dist/src/ alike. '0.0.0' when none is found.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'ha' && pkg.version) return pkg.version;
    }
    const up = dirname(dir);
    if (up === dir) return '0.0.0';
    dir = up;
  }
}

export const VERSION: string = findVersion();
