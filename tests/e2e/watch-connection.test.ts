/**
 * The crash watcher's connection (LocalPostgres.openWatchConnection) against real PostgreSQL 15:
 * it ends within milliseconds of a SIGKILL of the postmaster (its backend exits on postmaster
 * death), not when the agent closes it, and when its backend is terminated while the postmaster
 * lives.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectBinDir } from '../../src/postgres/bin-dir.ts';
import { LocalPostgres } from '../../src/postgres/local.ts';
import { freePorts } from '../support/ports.ts';
import { isAlive, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

describe('LocalPostgres watch connection (real PostgreSQL)', () => {
  let dir = '';
  let pg: LocalPostgres;

  beforeAll(async () => {
    dir = await makeTempDir('ha-pg-watch-');
    const [port] = await freePorts(1);
    pg = new LocalPostgres({
      name: 'node-1',
      scope: 'demo',
      dataDir: join(dir, 'data'),
      binDir: detectBinDir(),
      listen: { host: '127.0.0.1', port: port! },
      socketDir: join(dir, 'sock'),
      superuser: { username: 'postgres', password: 'su' },
      replication: { username: 'replicator', password: 're' },
      pgHba: [],
    });
    await pg.initdb([]);
    await pg.configure({ role: 'primary', parameters: { shared_buffers: '16MB' } });
    await pg.start(30_000);
    await pg.postBootstrap();
  }, 90_000);

  afterAll(async () => {
    if (pg) {
      await pg.close().catch(() => undefined);
      const pid = await pg.postmasterPid();
      await pg.stop('immediate', 10_000).catch(() => undefined);
      if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    if (dir) await removeTempDir(dir);
  });

  it('is not reported when the agent closes it', async () => {
    let ended = 0;
    const close = await pg.openWatchConnection(() => ended++, 5000);
    expect(
      (await pg.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'ha-watch'"))[0]!.n,
    ).toBe(1);
    close();
    await waitFor(
      async () =>
        (await pg.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'ha-watch'"))[0]!.n === 0,
      5000,
      'watch backend gone',
    );
    expect(ended).toBe(0);
  });

  it('ends when its backend is terminated while the postmaster lives', async () => {
    let ended = 0;
    const close = await pg.openWatchConnection(() => ended++, 5000);
    await pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ha-watch'");
    await waitFor(async () => ended === 1, 5000, 'watch connection end reported');
    expect(await pg.postmasterPid()).toBeDefined();
    close();
    expect(ended).toBe(1);
  });

  it('ends within milliseconds of a SIGKILL of the postmaster', async () => {
    let endedAt = 0;
    const close = await pg.openWatchConnection(() => (endedAt = performance.now()), 5000);
    const pid = (await pg.postmasterPid())!;
    const t = performance.now();
    process.kill(pid, 'SIGKILL');
    await waitFor(async () => endedAt > 0, 5000, 'watch connection end reported');
    close();
    expect(endedAt - t).toBeLessThan(100);
    await waitFor(async () => (await pg.postmasterPid()) === undefined, 5000, 'postmaster gone');
  });
});
