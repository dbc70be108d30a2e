/** initdb: option checking (patroni.md §3.10) and the run as the PostgreSQL OS user. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chownToPg } from './os-user.ts';
import { runAsPg } from './run-as-pg.ts';

/** Options used when bootstrap.initdb gives none. */
export const DEFAULT_INITDB_OPTIONS = ['--encoding=UTF8', '--locale=C.UTF-8'];

/**
 * Options the agent refuses: Patroni's list (pgdata, nosync, pwfile, sync-only, version) plus
 * those the agent sets itself (username) and short-option spellings of them.
 */
export const FORBIDDEN_INITDB_OPTIONS = ['pgdata', 'nosync', 'no-sync', 'pwfile', 'sync-only', 'version', 'username'];

/** Error with code 'pg_config_invalid' for a rejected initdb option. */
export class InitdbOptionError extends Error {
  readonly code = 'pg_config_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'InitdbOptionError';
  }
}

/**
 * Checks initdb options (`--key=value` or `--flag`) and returns the list to pass
 * (DEFAULT_INITDB_OPTIONS when `options` is empty).
 * @throws InitdbOptionError for an option not starting with `--` or a forbidden key.
 */
export function checkInitdbOptions(options: string[]): string[] {
  if (options.length === 0) return [...DEFAULT_INITDB_OPTIONS];
  for (const opt of options) {
    const m = /^--([A-Za-z0-9][A-Za-z0-9_-]*)(=.*)?$/s.exec(opt);
    if (!m) throw new InitdbOptionError(`initdb option ${JSON.stringify(opt)} must look like --key=value or --flag`);
    const key = (m[1] ?? '').toLowerCase();
    if (FORBIDDEN_INITDB_OPTIONS.includes(key)) {
      throw new InitdbOptionError(
        `initdb option --${key} is not allowed (the agent sets the data directory, superuser, password file and durability itself)`,
      );
    }
  }
  return [...options];
}

/** Inputs of runInitdb. */
export interface InitdbRun {
  binDir: string;
  dataDir: string;
  superuser: { username: string; password: string };
  options: string[];
}

/**
 * Runs `initdb -D <dataDir> --username=<su> --pwfile=<temp> <options>` as the PostgreSQL user.
 * The password file lives in a private temp dir (0700, chowned) and is removed afterwards. The data
 * directory must exist (empty, 0700, owned by the PostgreSQL user).
 * @throws InitdbOptionError on bad options; PgToolError with initdb's stderr on failure.
 */
export async function runInitdb(r: InitdbRun): Promise<void> {
  const options = checkInitdbOptions(r.options);
  const dir = await mkdtemp(join(tmpdir(), 'ha-initdb-'));
  try {
    await chownToPg(dir);
    const pwfile = join(dir, 'pwfile');
    await writeFile(pwfile, r.superuser.password + '\n', { mode: 0o600 });
    await chownToPg(pwfile);
    await runAsPg(join(r.binDir, 'initdb'), ['-D', r.dataDir, `--username=${r.superuser.username}`, `--pwfile=${pwfile}`, ...options], {
      timeoutMs: 300_000,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
