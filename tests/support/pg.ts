/**
 * A standalone real PostgreSQL (Debian's postgresql-15) for tests that need one server: initdb in a
 * temp dir, started on a free loopback port with its socket in the temp dir, as the `postgres` OS
 * user when running as root. Stopped (immediate) and removed by `stop()`.
 */
import { execFileSync } from 'node:child_process';
import { chown, mkdir, writeFile, appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { makeTempDir, removeTempDir } from './tmp.ts';
import { detectBinDir } from '../../src/postgres/bin-dir.ts';
import { run } from './processes.ts';

/** Directory of PostgreSQL's server binaries (the agent's own detection). */
export function pgBinDir(): string {
  return detectBinDir();
}

const asRoot = process.getuid?.() === 0;
function pgUser(): { uid: number; gid: number } | undefined {
  if (!asRoot) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export interface TestPostgres {
  port: number;
  /** Directory holding the unix socket. */
  socketDir: string;
  dataDir: string;
  /** TCP URL as superuser `postgres` (trust auth on loopback). */
  url: string;
  bin: string;
  /** Runs psql -c as superuser; returns stdout (tuples only, unaligned). */
  psql(sql: string, db?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Extra postgresql.conf lines may be given. */
export async function startPostgres(extraConf: string[] = []): Promise<TestPostgres> {
  const bin = pgBinDir();
  const dir = await makeTempDir('ha-pg-');
  const dataDir = join(dir, 'data');
  const socketDir = join(dir, 'sock');
  await mkdir(socketDir);
  const user = pgUser();
  if (user) await chown(socketDir, user.uid, user.gid);
  if (user) await chown(dir, user.uid, user.gid);
  const port = await freePort();
  const spawnOpts = user ? { uid: user.uid, gid: user.gid, env: { ...process.env, HOME: dir } } : {};
  await run(
    join(bin, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'],
    spawnOpts,
  );
  await appendFile(
    join(dataDir, 'postgresql.conf'),
    [`port = ${port}`, `listen_addresses = '127.0.0.1'`, `unix_socket_directories = '${socketDir}'`, 'fsync = off', ...extraConf, ''].join(
      '\n',
    ),
  );
  await writeFile(
    join(dataDir, 'pg_hba.conf'),
    'local all all trust\nhost all all 127.0.0.1/32 trust\nlocal replication all trust\nhost replication all 127.0.0.1/32 trust\n',
  );
  await run(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', join(dir, 'pg.log'), '-w', '-t', '60', 'start'], spawnOpts);
  const psql = (sql: string, db = 'postgres') =>
    run(join(bin, 'psql'), ['-h', socketDir, '-p', String(port), '-U', 'postgres', '-d', db, '-XAtq', '-c', sql], spawnOpts);
  return {
    port,
    socketDir,
    dataDir,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    bin,
    psql,
    async stop() {
      await run(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], spawnOpts).catch(() => undefined);
      await removeTempDir(dir);
    },
  };
}
