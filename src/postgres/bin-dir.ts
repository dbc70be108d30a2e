/** Locating PostgreSQL's server binaries (initdb, pg_ctl, postgres, pg_basebackup, pg_controldata). */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const DEBIAN_ROOT = '/usr/lib/postgresql';

/**
 * The directory holding PostgreSQL's server binaries.
 * Order: `configured` when given (returned as is, not checked); else `pg_config --bindir` when it
 * holds `initdb`; else the newest `/usr/lib/postgresql/<major>/bin` holding `initdb` (Debian layout,
 * where pg_config often points at /usr/bin which has only client wrappers).
 * @throws Error telling to `apt-get install postgresql-15` when nothing is found.
 */
export function detectBinDir(configured?: string): string {
  if (configured) return configured;
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (dir && existsSync(join(dir, 'initdb'))) return dir;
  } catch {
    /* no pg_config: try the Debian layout */
  }
  const majors = existsSync(DEBIAN_ROOT)
    ? readdirSync(DEBIAN_ROOT)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const dir = join(DEBIAN_ROOT, major, 'bin');
    if (existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new Error(
    'PostgreSQL server binaries not found (no initdb via pg_config --bindir or in /usr/lib/postgresql/<version>/bin): apt-get install postgresql-15, or set database.bin_dir',
  );
}
