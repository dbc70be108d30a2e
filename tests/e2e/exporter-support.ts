/**
 * Exporter e2e helpers: a streaming replica made with pg_basebackup from a startPostgres()
 * server, the shared pg_exporter-config path (from HA_REFERENCE_DIR, see tests/support/reference.ts),
 * promtool, and a running Exporter + Hono app.
 */
import { execFileSync } from 'node:child_process';
import { chown, mkdir, appendFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { freePort } from '../support/ports.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { run } from '../support/processes.ts';
import type { TestPostgres } from '../support/pg.ts';
import { REFERENCE_DIR, REFERENCE_SKIP, referencePath } from '../support/reference.ts';

/**
 * The reference collector set, pg_exporter-config in HA_REFERENCE_DIR (../shared in CI). Tests
 * that use it are skipped without it: `it.skipIf(!HAS_SHARED_CONFIG)(\`… ${REFERENCE_SKIP}\`, …)`.
 */
export const SHARED_CONFIG = referencePath('pg_exporter-config');
/** Whether {@link SHARED_CONFIG} is available. */
export const HAS_SHARED_CONFIG = REFERENCE_DIR !== undefined;
export { REFERENCE_SKIP };
/** The project's own default collector set. */
export const DEFAULT_COLLECTORS = resolve(import.meta.dirname, '../../collectors');

const asRoot = process.getuid?.() === 0;
function pgUser(): { uid: number; gid: number } | undefined {
  if (!asRoot) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  };
}

export interface TestReplica {
  port: number;
  url: string;
  dataDir: string;
  psql(sql: string, db?: string): Promise<string>;
  promote(): Promise<void>;
  stop(): Promise<void>;
}

/** Streams from `primary` (pg_basebackup -R -X stream) on a new free port; waits until it answers. */
export async function startReplica(primary: TestPostgres): Promise<TestReplica> {
  const dir = await makeTempDir('ha-replica-');
  const dataDir = join(dir, 'data');
  const socketDir = join(dir, 'sock');
  await mkdir(socketDir);
  const user = pgUser();
  if (user) {
    await chown(dir, user.uid, user.gid);
    await chown(socketDir, user.uid, user.gid);
  }
  const opts = user ? { uid: user.uid, gid: user.gid, env: { ...process.env, HOME: dir } } : {};
  const port = await freePort();
  await run(
    join(primary.bin, 'pg_basebackup'),
    ['-h', primary.socketDir, '-p', String(primary.port), '-U', 'postgres', '-D', dataDir, '-R', '-X', 'stream', '-c', 'fast'],
    opts,
  );
  await appendFile(join(dataDir, 'postgresql.conf'), `\nport = ${port}\nunix_socket_directories = '${socketDir}'\nhot_standby = on\n`);
  await run(join(primary.bin, 'pg_ctl'), ['-D', dataDir, '-l', join(dir, 'pg.log'), '-w', '-t', '60', 'start'], opts);
  const psql = (sql: string, db = 'postgres') =>
    run(join(primary.bin, 'psql'), ['-h', socketDir, '-p', String(port), '-U', 'postgres', '-d', db, '-XAtq', '-c', sql], opts);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dataDir,
    psql,
    async promote() {
      await run(join(primary.bin, 'pg_ctl'), ['-D', dataDir, '-w', 'promote'], opts);
    },
    async stop() {
      await run(join(primary.bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], opts).catch(() => undefined);
      await removeTempDir(dir);
    },
  };
}

/** `promtool check metrics` on a body (shared with the node's metrics tests). */
export { promtoolCheckMetrics as promtoolCheck } from '../support/prometheus.ts';

/** Value of the first sample line `name{...} value` whose label text contains every `has` part. */
export function sampleOf(body: string, name: string, ...has: string[]): number | undefined {
  for (const line of body.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (!has.every((h) => rest.includes(h))) continue;
    const v = line.slice(line.lastIndexOf(' ') + 1);
    return v === 'NaN' ? NaN : Number(v);
  }
  return undefined;
}
