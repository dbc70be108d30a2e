/**
 * The OS identity PostgreSQL's binaries run as. PostgreSQL refuses to run as root, so when the
 * agent runs as root every PostgreSQL process (initdb, pg_ctl, postgres, pg_basebackup,
 * pg_controldata, psql) runs as the `postgres` OS user and the files it needs are chowned to it.
 * When the agent is not root, everything runs as the current user and nothing is chowned.
 */
import { readFileSync } from 'node:fs';
import { chown } from 'node:fs/promises';
import { userInfo } from 'node:os';

/** Who PostgreSQL runs as. `switchUser` is true when spawns must set uid/gid (agent is root). */
export interface PgOsUser {
  name: string;
  uid: number;
  gid: number;
  /** Home directory, used as HOME for spawned tools. */
  home: string;
  switchUser: boolean;
}

let cached: PgOsUser | undefined;

/**
 * Parses one /etc/passwd text and returns the entry for `name`, or undefined.
 * Shape of a line: `name:x:uid:gid:gecos:home:shell`.
 */
export function parsePasswdEntry(passwd: string, name: string): { uid: number; gid: number; home: string } | undefined {
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f[0] !== name || f.length < 7) continue;
    const uid = Number(f[2]);
    const gid = Number(f[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) continue;
    return { uid, gid, home: f[5] || '/' };
  }
  return undefined;
}

/**
 * The user PostgreSQL runs as, looked up once per process: the `postgres` entry of /etc/passwd
 * when running as root, else the current user.
 * @throws Error when running as root and no `postgres` user exists (install postgresql-15).
 */
export function pgOsUser(): PgOsUser {
  if (cached) return cached;
  if (process.getuid?.() === 0) {
    const entry = parsePasswdEntry(readFileSync('/etc/passwd', 'utf8'), 'postgres');
    if (!entry) throw new Error('running as root but there is no `postgres` OS user to run PostgreSQL as (apt-get install postgresql-15)');
    cached = { name: 'postgres', ...entry, switchUser: true };
  } else {
    const me = userInfo();
    cached = { name: me.username, uid: me.uid, gid: me.gid, home: me.homedir, switchUser: false };
  }
  return cached;
}

/** Makes `path` owned by the PostgreSQL OS user (no-op when not root). */
export async function chownToPg(path: string): Promise<void> {
  const u = pgOsUser();
  if (u.switchUser) await chown(path, u.uid, u.gid);
}
