/**
 * The OS identity PostgreSQL's binaries run as. PostgreSQL refuses to run as root, so when the
 * agent runs as root every PostgreSQL process (initdb, pg_ctl, postgres, pg_basebackup,
 * pg_controldata, psql) runs as the `postgres` OS user and the files it needs are chowned to it.
 * When the agent is not root, everything runs as the current user and nothing is chowned.
 */
import { readFileSync } from 'node:fs';
import { chown, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
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

/** The mode bits of a directory entry as `ls` shows them (`rwx------`). */
function modeText(mode: number): string {
  const bits = 'rwxrwxrwx';
  let out = '';
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? bits[i] : '-';
  return out;
}

/**
 * Can `who` enter directory `dir` of `mode`, `uid`, `gid` (the search bit of its owner, group or
 * others' class)? Pure: the rule of POSIX permissions, without supplementary groups.
 */
export function maySearch(who: { uid: number; gid: number }, entry: { mode: number; uid: number; gid: number }): boolean {
  if (who.uid === 0) return true;
  if (entry.uid === who.uid) return (entry.mode & 0o100) !== 0;
  if (entry.gid === who.gid) return (entry.mode & 0o010) !== 0;
  return (entry.mode & 0o001) !== 0;
}

/**
 * When the agent runs as root: every existing directory above `path` must be one the PostgreSQL OS
 * user can enter, or initdb, pg_ctl and the server fail with a bare "Permission denied" (issue 30:
 * `etcd --data-dir /var/tmp/ha-demo/etcd` makes /var/tmp/ha-demo root-only). Missing ancestors are
 * skipped (they are created 0755 later). No-op when the agent is not root.
 * @throws Error naming the directory, its owner and mode, and the fix.
 */
export async function assertPgCanReach(path: string): Promise<void> {
  const u = pgOsUser();
  if (!u.switchUser) return;
  let dir = dirname(resolve(path));
  for (;;) {
    const st = await stat(dir).catch(() => undefined);
    if (st && !maySearch(u, { mode: st.mode, uid: st.uid, gid: st.gid })) {
      throw new Error(
        `the PostgreSQL OS user ${u.name} cannot enter ${dir} (mode ${modeText(st.mode & 0o777)}, owner uid ${st.uid}), above ${path}: ` +
          `allow it (chmod o+x ${dir}) or put the directory elsewhere`,
      );
    }
    const up = dirname(dir);
    if (up === dir) return;
    dir = up;
  }
}
