/**
 * Pooler mode against Debian's real pgbouncer: a URL whose database is `pgbouncer` selects the
 * `pgbouncer` prefix, pooler-tagged collectors only, and the simple query protocol.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chown, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exporter } from '../../src/exporter/exporter.ts';
import { createExporterApp } from '../../src/exporter/http.ts';
import { freePort } from '../support/ports.ts';
import { startPostgres, type TestPostgres } from '../support/pg.ts';
import { stopPid, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { DEFAULT_COLLECTORS, HAS_SHARED_CONFIG, promtoolCheck, REFERENCE_SKIP, sampleOf, SHARED_CONFIG } from './exporter-support.ts';

let pg: TestPostgres;
let dir: string;
let bouncer: ChildProcess;
let port: number;
const exporters: Exporter[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  dir = await makeTempDir('exporter-pgb-');
  port = await freePort();
  await writeFile(join(dir, 'users.txt'), '"postgres" ""\n');
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `postgres = host=127.0.0.1 port=${pg.port} dbname=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      "unix_socket_dir = ''",
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'admin_users = postgres',
      'stats_users = postgres',
      'pool_mode = session',
      'ignore_startup_parameters = extra_float_digits,application_name',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot
    ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) }
    : {};
  if (asRoot) for (const f of ['', 'users.txt', 'pgbouncer.ini']) await chown(join(dir, f), ids.uid!, ids.gid!);
  bouncer = spawn('pgbouncer', [join(dir, 'pgbouncer.ini')], { ...ids, stdio: 'ignore' });
  await waitFor(
    () =>
      new Promise<boolean>((res) => {
        void import('node:net').then(({ connect }) => {
          const s = connect(port, '127.0.0.1', () => (s.destroy(), res(true)));
          s.on('error', () => res(false));
        });
      }),
    15_000,
    'pgbouncer to listen',
  );
});

afterAll(async () => {
  for (const e of exporters) await e.stop();
  if (bouncer?.pid) await stopPid(bouncer.pid);
  await pg?.stop();
  if (dir) await removeTempDir(dir);
});

describe('pooler mode against a real pgbouncer', () => {
  it.skipIf(!HAS_SHARED_CONFIG)(
    `scrapes pgbouncer with the shared collector files, prefix pgbouncer, role primary ${REFERENCE_SKIP}`,
    async () => {
      const e = new Exporter({ url: `postgres://postgres@127.0.0.1:${port}/pgbouncer`, configPath: SHARED_CONFIG, connectTimeoutMs: 2000 });
      exporters.push(e);
      expect(e.pooler).toBe(true);
      const body = await e.collect();
      expect(sampleOf(body, 'pgbouncer_up')).toBe(1);
      expect(sampleOf(body, 'pgbouncer_version')).toBeGreaterThanOrEqual(10800);
      expect(sampleOf(body, 'pgbouncer_in_recovery')).toBe(0);
      expect(sampleOf(body, 'pgbouncer_list_items', 'list="databases"')).toBeGreaterThanOrEqual(1);
      expect(sampleOf(body, 'pgbouncer_pool_active_clients', 'datname="pgbouncer"')).toBeDefined();
      expect(body).not.toMatch(/^pg_/m);
      expect(body).not.toMatch(/^db_/m);
      expect(
        e
          .statRows()
          .map((r) => r.name)
          .every((n) => n.startsWith('pgbouncer')),
      ).toBe(true);
      expect(e.statRows().filter((r) => r.error > 0)).toEqual([]);
      const r = promtoolCheck(body);
      expect(r.code, r.output).not.toBe(1);
      expect(await e.probe.probe()).toBe('primary');
      const app = createExporterApp(e);
      expect((await app.request('/primary')).status).toBe(200);
      expect((await app.request('/replica')).status).toBe(404);
    },
  );

  it('runs only the pooler collector of the project default set', async () => {
    const e = new Exporter({
      url: `postgres://postgres@127.0.0.1:${port}/pgbouncer`,
      configPath: DEFAULT_COLLECTORS,
      connectTimeoutMs: 2000,
    });
    exporters.push(e);
    const body = await e.collect();
    expect(sampleOf(body, 'pgbouncer_up')).toBe(1);
    expect(e.statRows().map((r) => r.name)).toEqual(['pgbouncer_lists']);
    expect(sampleOf(body, 'pgbouncer_lists_items', 'list="pools"')).toBeGreaterThanOrEqual(0);
  });
});
