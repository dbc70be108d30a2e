/**
 * Disaster recovery (issue 25; docs/backups.md "Restoring to a point in time"): every member of a
 * real 2-member cluster (ttl 10, loop_wait 2, retry_timeout 3) is lost, and the cluster is
 * bootstrapped again from a pgBackRest backup to a point in time, with the default configuration
 * except the archive (archive_command pushing to a repository on the local file system,
 * `database.recovery_conf.restore_command` fetching from it, a `backup` section).
 *
 * 1. node1 bootstraps, node2 streams; `hactl backup node1 --create` takes a full backup; the
 *    recorded writer runs; a target instant T is taken in the middle of its writes; the WAL past
 *    T is archived.
 * 2. Every member lost: agents and postmasters killed (SIGKILL), data directories removed, the
 *    cluster's keys deleted from etcd.
 * 3. node1's file gets a custom bootstrap method `pitr` (pgBackRest restore of the latest backup,
 *    `no_params`, `recovery_conf: {recovery_target_time: T}`): it restores, recovers to T,
 *    promotes there and leads. Every write acknowledged before T is there; no write sent after
 *    T is.
 * 4. node2 (its data gone) joins and streams; it holds the same rows.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, stopPid, waitFor } from '../support/processes.ts';
import { runHactl } from '../hactl/run-hactl.ts';
import { TestCluster } from './support/cluster.ts';
import { archiveCommand, backupSection, pgbackrest, restoreCommand, startArchivedPair } from './support/pgbackrest.ts';
import { startWriter, WRITER_TABLE, type WriteRecord } from './support/writer.ts';
import { T } from './faults/timing.ts';

/** Time the tools may take on a small database and a loaded 2-core machine (pgBackRest restore, PostgreSQL's replay). */
const TOOLS_MS = 90_000;
/** The restored member leads: its first cycles (2 × loop_wait) and DCS calls (2 × retry_timeout), plus the tools. */
const BOOTSTRAP_BOUND_MS = (2 * T.loop_wait + 2 * T.retry_timeout) * 1000 + TOOLS_MS;
const LOG_RE = /bootstrap|recover|restore|promot|start|clone|stream/i;

let c: TestCluster;
const figures: string[] = [];
let target = '';
let before: WriteRecord[] = [];
let after: WriteRecord[] = [];

/** Epoch ms as PostgreSQL timestamptz text (UTC, milliseconds). */
function timestampOf(ms: number): string {
  return `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')}+00`;
}

beforeAll(async () => {
  c = await TestCluster.create({
    nodes: 2,
    ttl: T.ttl,
    loopWait: T.loop_wait,
    retryTimeout: T.retry_timeout,
    parameters: (n) => ({ archive_mode: 'on', archive_command: archiveCommand(n, 'e2e') }),
    databaseExtra: (n) => [`recovery_conf: ${JSON.stringify({ restore_command: restoreCommand(n, 'e2e') })}`],
    topExtra: (n) => [backupSection(n, 'e2e')],
  });
  await startArchivedPair(c);
});

afterAll(async () => {
  if (figures.length) console.log(`pitr figures:\n${figures.join('\n')}`);
  await c?.destroy();
});

describe('every member lost: the cluster bootstrapped from a pgBackRest backup to a point in time', () => {
  it('a full backup, then writes on both sides of a target instant, archived', async () => {
    const r = await runHactl(['-c', c.node('node1').configPath, 'backup', 'node1', '--create'], { timeoutMs: 180_000 });
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    const writer = startWriter(c);
    await sleep(3000);
    const t = Date.now();
    target = timestampOf(t);
    await sleep(3000);
    const records = await writer.stop();
    // Acknowledged before T: committed before T. Sent after T (its predecessor acknowledged after T): committed after T.
    before = records.filter((w) => w.at < t);
    after = records.filter((_, i) => i > 0 && records[i - 1]!.at > t);
    expect(before.length, 'writes before the target').toBeGreaterThan(10);
    expect(after.length, 'writes after the target').toBeGreaterThan(10);
    const seg = (await c.psql('node1', 'select pg_walfile_name(pg_switch_wal())')).trim();
    await waitFor(
      async () => (await c.psql('node1', "select coalesce(last_archived_wal, '') from pg_stat_archiver")).trim() >= seg,
      60_000,
      `${seg} archived`,
    );
  });

  it(`node1 restored to the target leads within ${BOOTSTRAP_BOUND_MS / 1000} s: every write acknowledged before it is there, none sent after it`, async () => {
    // Every member lost.
    for (const n of c.nodes) {
      await c.killAgent(n.name);
      const pm = c.postmasterPid(n.name);
      if (pm) await stopPid(pm, 'SIGKILL');
    }
    for (const n of c.nodes) await rm(n.dataDir, { recursive: true, force: true });
    await c.etcdctl(['del', '--prefix', c.key('')]);
    // The disaster-recovery bootstrap (docs/backups.md).
    const node1 = c.node('node1');
    const file = await readFile(node1.configPath, 'utf8');
    const method = { command: `${pgbackrest(node1, 'e2e')} restore`, no_params: true, recovery_conf: { recovery_target_time: target } };
    await writeFile(node1.configPath, file.replace(/^bootstrap:$/m, `bootstrap:\n  method: pitr\n  pitr: ${JSON.stringify(method)}`));

    const t0 = Date.now();
    c.start('node1');
    await waitFor(async () => (await c.primaries()).includes('node1'), BOOTSTRAP_BOUND_MS, 'node1 restored and primary').catch((e) => {
      throw new Error(`${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}`);
    });
    const ms = Date.now() - t0;
    const ids = new Set(
      (await c.psql('node1', `select id from ${WRITER_TABLE}`))
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .map(Number),
    );
    expect(
      before.filter((w) => !ids.has(w.id)).map((w) => w.id),
      'writes acknowledged before the target, missing',
    ).toEqual([]);
    expect(
      after.filter((w) => ids.has(w.id)).map((w) => w.id),
      'writes sent after the target, present',
    ).toEqual([]);
    // Promoted at the target: a new timeline; the target is gone from its configuration.
    expect(Number((await c.psql('node1', 'select timeline_id from pg_control_checkpoint()')).trim())).toBeGreaterThan(1);
    expect((await c.psql('node1', 'show recovery_target_time')).trim()).toBe('');
    const leader = await c.etcdGet('leader');
    expect(leader).toBe('node1');
    figures.push(
      `node1 restored to ${target} and primary: ${ms} ms (bound ${BOOTSTRAP_BOUND_MS}); ${before.length} writes before, ${after.length} after`,
    );
  });

  it('node2, its data gone, joins the restored cluster and streams, with the same rows', async () => {
    const t0 = Date.now();
    c.start('node2');
    await c.waitForStreaming(['node2'], BOOTSTRAP_BOUND_MS);
    const rows = (name: string) => c.psql(name, `select count(*), coalesce(max(id), 0) from ${WRITER_TABLE}`);
    await waitFor(async () => (await rows('node2')) === (await rows('node1')), 30_000, 'node2 has node1 rows');
    figures.push(`node2 streaming from the restored node1: ${Date.now() - t0} ms`);
  });
});
