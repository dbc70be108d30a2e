/**
 * LocalPostgres against real PostgreSQL 15: a primary made by initdb and a replica cloned by
 * pg_basebackup, streaming through a slot; probe, controldata, pending restart, promote, stop.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectBinDir } from '../../src/postgres/bin-dir.ts';
import { LocalPostgres, type LocalPostgresOptions } from '../../src/postgres/local.ts';
import { slotNameForMember } from '../../src/postgres/slots.ts';
import { isPostmasterAlive } from '../../src/postgres/pg-ctl.ts';
import { freePorts } from '../support/ports.ts';
import { isAlive, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

describe('LocalPostgres (real PostgreSQL)', () => {
  let dir = '';
  let primary: LocalPostgres;
  let replica: LocalPostgres;
  let ports: number[] = [];
  const slot = slotNameForMember('node-2');
  const started: LocalPostgres[] = [];

  const options = (name: string, port: number): LocalPostgresOptions => ({
    name,
    scope: 'demo',
    dataDir: join(dir, name, 'data'),
    binDir: detectBinDir(),
    listen: { host: '127.0.0.1', port },
    socketDir: join(dir, name, 'sock'),
    superuser: { username: 'postgres', password: "su p'ss" },
    replication: { username: 'replicator', password: 're pl\\pass' },
    pgHba: ['host all all 127.0.0.2/32 reject'],
  });

  beforeAll(async () => {
    dir = await makeTempDir('ha-pg-local-');
    ports = await freePorts(3);
    primary = new LocalPostgres(options('node-1', ports[0]!));
    replica = new LocalPostgres(options('node-2', ports[1]!));
    started.push(primary, replica);
  });

  afterAll(async () => {
    for (const pg of started) {
      await pg.close().catch(() => undefined);
      const pid = await pg.postmasterPid();
      await pg.stop('immediate', 10_000).catch(() => undefined);
      if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    if (dir) await removeTempDir(dir);
  });

  it('bootstraps a primary: initdb, configure, start, postBootstrap, probe', async () => {
    expect(await primary.hasData()).toBe(false);
    await expect(primary.initdb(['--nosync'])).rejects.toThrow(/--nosync is not allowed/);
    await primary.initdb([]);
    expect(await primary.hasData()).toBe(true);
    await primary.configure({ role: 'primary', parameters: { shared_buffers: '32MB' } });
    await primary.start(30_000);
    const pid = await primary.postmasterPid();
    await primary.start(10_000); // already running: no second postmaster
    expect(await primary.postmasterPid()).toBe(pid);
    await primary.postBootstrap();
    await primary.postBootstrap(); // idempotent

    const st = await primary.probe(5_000);
    expect(st.inRecovery).toBe(false);
    expect(st.serverVersion).toBeGreaterThanOrEqual(150000);
    expect(st.timeline).toBe(1);
    expect(st.flushLsn).toBeGreaterThan(0n);
    expect(st.streaming).toBe(false);
    expect(st.postmasterStartTime).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    expect(st.replication).toEqual([]);

    const roles = await primary.query<{ rolname: string; rolreplication: boolean }>(
      "SELECT rolname, rolreplication FROM pg_roles WHERE rolname = 'replicator'",
    );
    expect(roles).toEqual([{ rolname: 'replicator', rolreplication: true }]);
    const settings = await primary.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('cluster_name','wal_level','hot_standby','wal_log_hints','shared_buffers') ORDER BY name",
    );
    expect(Object.fromEntries(settings.map((s) => [s.name, s.setting]))).toEqual({
      cluster_name: 'demo',
      hot_standby: 'on',
      shared_buffers: '4096',
      wal_level: 'replica',
      wal_log_hints: 'on',
    });
  });

  it('clones a replica with pg_basebackup that streams through its slot', async () => {
    await primary.syncSlots([slot, 'stale_slot']);
    await primary.syncSlots([slot]); // drops the inactive stale_slot
    expect(Object.keys((await primary.probe(5_000)).slots)).toEqual([slot]);

    const upstream = { host: '127.0.0.1', port: ports[0]!, name: 'node-1' };
    await replica.basebackup(upstream);
    await replica.configure({ role: 'replica', upstream, slotName: slot, parameters: {} });
    await replica.start(30_000);

    const rst = await waitFor(
      async () => {
        const s = await replica.probe(2_000);
        return s.streaming ? s : undefined;
      },
      20_000,
      'replica streaming',
    );
    expect(rst.inRecovery).toBe(true);
    expect(rst.timeline).toBe(1);
    expect(rst.flushLsn).toBeUndefined();
    expect(rst.receiveLsn).toBeGreaterThan(0n);
    expect(rst.replayLsn).toBeGreaterThan(0n);
    expect(rst.replayPaused).toBe(false);
    expect(rst.archiveRecovery).toBe(false);
    expect(rst.upstreamHost).toBe('127.0.0.1');

    const pst = await waitFor(
      async () => {
        const s = await primary.probe(2_000);
        return s.replication.length === 1 ? s : undefined;
      },
      10_000,
      'replication row',
    );
    expect(pst.replication[0]).toMatchObject({
      application_name: 'node-2',
      usename: 'replicator',
      client_addr: '127.0.0.1',
      state: 'streaming',
    });
    expect(pst.slots[slot]).toBeGreaterThan(0n);
    const active = await primary.query<{ active: boolean }>(`SELECT active FROM pg_replication_slots WHERE slot_name = '${slot}'`);
    expect(active).toEqual([{ active: true }]);

    // an active slot that is no longer wanted is kept
    await primary.syncSlots([]);
    expect(Object.keys((await primary.probe(5_000)).slots)).toEqual([slot]);
  });

  it('replicates a write and reports controldata', async () => {
    await primary.query('CREATE TABLE t (id int PRIMARY KEY, v text)');
    await primary.query("INSERT INTO t VALUES (1, 'one')");
    const rows = await waitFor(
      async () => {
        const r = await replica.query<{ v: string }>('SELECT v FROM t WHERE id = 1').catch(() => []);
        return r.length ? r : undefined;
      },
      10_000,
      'row on replica',
    );
    expect(rows).toEqual([{ v: 'one' }]);
    await expect(replica.query("INSERT INTO t VALUES (2, 'two')")).rejects.toMatchObject({ code: 'pg_query_failed', sqlState: '25006' });

    const pcd = await primary.controlData();
    const rcd = await replica.controlData();
    expect(pcd.systemIdentifier).toMatch(/^\d{10,}$/);
    expect(rcd.systemIdentifier).toBe(pcd.systemIdentifier);
    expect(pcd.clusterState).toBe('in production');
    expect(rcd.clusterState).toBe('in archive recovery');
    expect(pcd.checkpointTimeline).toBe(1);
    expect(pcd.checkpointLsn).toBeGreaterThan(0n);
    expect(typeof rcd.minRecoveryLsn).toBe('bigint');
  });

  it('reports a postmaster-context change as pending restart after reload', async () => {
    await primary.configure({ role: 'primary', parameters: { shared_buffers: '32MB', max_connections: 150 } });
    await primary.reload();
    const st = await waitFor(
      async () => {
        const s = await primary.probe(2_000);
        return s.pendingRestart.max_connections ? s : undefined;
      },
      10_000,
      'pending restart',
    );
    expect(st.pendingRestart.max_connections).toEqual({ old_value: '100', new_value: '150' });
    expect(Object.keys(st.pendingRestart)).toEqual(['max_connections']);
  });

  it('promotes the replica to timeline 2 and makes it writable', async () => {
    await replica.promote(20_000);
    const st = await replica.probe(5_000);
    expect(st.inRecovery).toBe(false);
    expect(st.timeline).toBe(2);
    expect(st.flushLsn).toBeGreaterThan(0n);
    await replica.query("INSERT INTO t VALUES (2, 'two')");
    await replica.promote(5_000); // no-op on a primary
  });

  it('a promoted replica configured as primary reports no pending restart for the recovery parameters it dropped (issue 30)', async () => {
    // As the agent does after a promotion: the primary's configuration, then a reload. PostgreSQL
    // marks recovery_target_timeline (postmaster context) pending; it means nothing on a primary.
    await replica.configure({ role: 'primary', parameters: {} });
    await replica.reload();
    await new Promise((r) => setTimeout(r, 500));
    const marked = await replica.query<{ name: string }>(
      "SELECT name FROM pg_settings WHERE pending_restart AND name LIKE 'recovery\\_target%'",
    );
    const st = await replica.probe(5_000);
    expect(st.pendingRestart, `PostgreSQL marks ${marked.map((m) => m.name).join(', ') || 'nothing'}`).toEqual({});
  });

  it('tracks the postmaster pid, stops, and is not reachable when stopped', async () => {
    const pid = await replica.postmasterPid();
    expect(pid).toBeGreaterThan(0);
    expect(isAlive(pid!)).toBe(true);
    await replica.stop('immediate', 10_000);
    expect(await replica.postmasterPid()).toBeUndefined();
    // gone, or an unreaped zombie (PID 1 of a container may reap late): not a live postmaster
    expect(isPostmasterAlive(pid!)).toBe(false);
    await replica.stop('fast', 10_000); // no-op when stopped
    await expect(replica.probe(1_000)).rejects.toMatchObject({ code: 'pg_unreachable' });

    await primary.stop('fast', 20_000);
    expect(await primary.postmasterPid()).toBeUndefined();
    expect((await primary.controlData()).clusterState).toBe('shut down');
  });

  it('removes data, fails a basebackup cleanly, runs a custom bootstrap command', async () => {
    await replica.removeData();
    expect(await replica.hasData()).toBe(false);
    expect(await readdir(join(dir, 'node-2', 'data'))).toEqual([]);

    // nothing listens on ports[2]: pg_basebackup fails, the data dir is left empty
    await expect(replica.basebackup({ host: '127.0.0.1', port: ports[2]!, name: 'nobody' })).rejects.toMatchObject({
      code: 'pg_tool_failed',
      message: expect.stringMatching(/pg_basebackup exited 1: .*connection/s),
    });
    expect(await readdir(join(dir, 'node-2', 'data'))).toEqual([]);

    // a non-empty data dir is refused without touching it
    await expect(primary.basebackup({ host: '127.0.0.1', port: ports[0]!, name: 'node-1' })).rejects.toThrow(/not empty/);
    expect(await primary.hasData()).toBe(true);

    const script = join(dir, 'bootstrap.sh');
    await writeFile(script, '#!/bin/sh\nfor a in "$@"; do echo "$a"; done > "${2#--datadir=}/args.txt"\n', { mode: 0o755 });
    await replica.customBootstrap(script);
    expect(await readFile(join(dir, 'node-2', 'data', 'args.txt'), 'utf8')).toBe(
      `--scope=demo\n--datadir=${join(dir, 'node-2', 'data')}\n`,
    );
    await expect(replica.customBootstrap('exit 3;')).rejects.toMatchObject({ code: 'pg_tool_failed', exitCode: 3 });
  });

  it('bounds the probe when the server accepts but never answers', async () => {
    const sockDir = join(dir, 'silent');
    await mkdir(sockDir);
    const port = ports[2]!;
    const clients = new Set<Socket>();
    // Accepts, reads and never answers (reading lets it see the client's close).
    const server: Server = createServer((s) => {
      clients.add(s);
      s.resume();
      s.on('close', () => clients.delete(s));
    });
    await new Promise<void>((r) => server.listen(join(sockDir, `.s.PGSQL.${port}`), r));
    const silent = new LocalPostgres({ ...options('silent', port), socketDir: sockDir });
    try {
      const t0 = Date.now();
      await expect(silent.probe(300)).rejects.toMatchObject({ code: 'pg_unreachable' });
      expect(Date.now() - t0).toBeLessThan(1_500);
    } finally {
      await silent.close().catch(() => undefined);
      for (const s of clients) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
