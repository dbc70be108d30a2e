/**
 * A standby cluster fed by its primary cluster's WAL archive alone (issue 25; docs/backups.md "A
 * standby cluster fed by the archive"), with real pgBackRest, etcd, PostgreSQL and agents: two
 * clusters on one etcd, ttl 10 / loop_wait 2 / retry_timeout 3, nothing else set but the archive.
 *
 * - Cluster A (scope e2e-arch, member a1) archives its WAL to a pgBackRest repository
 *   (archive_command) and takes a full backup there (`hactl backup a1 --create`).
 * - Cluster B (scope e2e-arch-standby, members b1 and b2) has `standby_cluster: {restore_command,
 *   create_replica_methods: [pgbackrest]}` and no host: its bootstrap winner restores A's backup by
 *   the `pgbackrest` method (`no_leader: true`: there is no source to copy from) and runs as the
 *   standby leader, fetching A's WAL from the archive; the other member is made from the standby
 *   leader and streams from it. Nothing of B ever connects to A: A has no walsender, B's standby
 *   leader no WAL receiver.
 * - Rows written in A reach both members of B once their WAL segment is archived, not before.
 * - `no_leader` in an initialized cluster with no leader: the standby leader is lost (agent and
 *   postmaster SIGKILL), the other member's data directory is removed, and once the leader key has
 *   expired its agent is started again: it restores by its no_leader method (the reference's
 *   "bootstrap (without leader)"), catches up from the archive, wins the race and is the standby
 *   leader, with every row.
 *
 * The members' pgBackRest files name A's repository and stanza with their own data directory (as
 * every server has its own /etc/pgbackrest/pgbackrest.conf). The dynamic `restore_command` is the
 * same on every member, so it passes the data directory as `--pg1-path="$PWD"` (restore_command
 * runs there); a production server's own pgbackrest.conf makes that unneeded.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, stopPid, waitFor } from '../support/processes.ts';
import { runHactl } from '../hactl/run-hactl.ts';
import { TestCluster } from './support/cluster.ts';
import { archiveCommand, backupSection, confOf, PGBACKREST, pgbackrest, restoreCommand, setUpPgBackRest } from './support/pgbackrest.ts';
import { T } from './faults/timing.ts';

const STANZA = 'e2e-arch';
/** Time the tools may take on a small database and a loaded 2-core machine (pgBackRest restore, PostgreSQL's replay). */
const TOOLS_MS = 90_000;
/** A member made and running: its first cycles (2 × loop_wait) and DCS calls (2 × retry_timeout), plus the tools. */
const JOIN_BOUND_MS = (2 * T.loop_wait + 2 * T.retry_timeout) * 1000 + TOOLS_MS;
/** A lost leader's key expires within ttl; the next member's race follows within loop_wait + retry_timeout. */
const LEADER_GONE_MS = (T.ttl + T.loop_wait + T.retry_timeout) * 1000;
const LOG_RE = /bootstrap|restore|clone|method|standby|leader|archive|start/i;
/** PostgreSQL's wal_retrieve_retry_interval (default): how often a standby asks the archive again for the next segment. */
const WAL_RETRIEVE_RETRY_MS = 5000;

let a: TestCluster;
let b: TestCluster;
const figures: string[] = [];

const count = async (c: TestCluster, node: string): Promise<number> =>
  Number((await c.psql(node, 'select count(*) from dr').catch(() => '-1')).trim());

/** Switches A's WAL segment and waits until the archiver has pushed it; returns the segment's name. */
async function archiveNow(): Promise<string> {
  const seg = (await a.psql('a1', 'select pg_walfile_name(pg_switch_wal())')).trim();
  await waitFor(
    async () => (await a.psql('a1', "select coalesce(last_archived_wal, '') from pg_stat_archiver")).trim() >= seg,
    60_000,
    `${seg} archived`,
  );
  return seg;
}

/** Nothing of B connects to A: no walsender on A. */
async function noWalsenderOnA(): Promise<void> {
  expect((await a.psql('a1', "select count(*) from pg_stat_activity where backend_type = 'walsender'")).trim()).toBe('0');
}

beforeAll(async () => {
  a = await TestCluster.create({
    nodes: 1,
    scope: STANZA,
    namePrefix: 'a',
    ttl: T.ttl,
    loopWait: T.loop_wait,
    retryTimeout: T.retry_timeout,
    parameters: (n) => ({ archive_mode: 'on', archive_command: archiveCommand(n, STANZA) }),
    topExtra: (n) => [backupSection(n, STANZA)],
  });
  await setUpPgBackRest(a);
  a.startAll();
  await waitFor(async () => (await a.primaries()).includes('a1'), 90_000, 'a1 primary');
  await a.psql(
    'a1',
    "create table dr (id int primary key, v text); insert into dr select g, 'before the backup' from generate_series(1, 10) g",
  );
  const r = await runHactl(['-c', a.node('a1').configPath, 'backup', 'a1', '--create'], { timeoutMs: 180_000 });
  if (r.code !== 0) throw new Error(`backup failed: ${r.stdout}${r.stderr}\n${a.logs()}`);
  await a.psql('a1', "insert into dr select g, 'after the backup' from generate_series(11, 20) g");
  await archiveNow();

  const restore = `${PGBACKREST} --config=${confOf(a.node('a1'))} --stanza=${STANZA} --pg1-path="$PWD" archive-get %f "%p"`;
  b = await TestCluster.create({
    nodes: 2,
    scope: 'e2e-arch-standby',
    namePrefix: 'b',
    etcd: a.etcd,
    ttl: T.ttl,
    loopWait: T.loop_wait,
    retryTimeout: T.retry_timeout,
    dcsExtra: [`standby_cluster: ${JSON.stringify({ restore_command: restore, create_replica_methods: ['pgbackrest'] })}`],
    databaseExtra: (n) => [
      'create_replica_methods: [pgbackrest, basebackup]',
      `pgbackrest: ${JSON.stringify({ command: `${pgbackrest(n, STANZA)} --delta --type=standby restore`, keep_data: true, no_params: true, no_leader: true })}`,
      `recovery_conf: ${JSON.stringify({ restore_command: restoreCommand(n, STANZA) })}`,
    ],
  });
  await setUpPgBackRest(b, a);
  b.startAll();
}, 300_000);

afterAll(async () => {
  if (figures.length) console.log(`standby-archive figures:\n${figures.join('\n')}`);
  await b?.destroy();
  await a?.destroy();
}, 60_000);

describe('a standby cluster fed by the WAL archive alone', () => {
  let leader = '';
  let other = '';

  it(
    `bootstraps by a pgBackRest restore (no host to copy from): a standby leader in archive recovery within ${JOIN_BOUND_MS / 1000} s, its replica streaming from it`,
    async () => {
      const t0 = Date.now();
      leader = await b.waitForLeader(JOIN_BOUND_MS);
      other = b.nodes.map((n) => n.name).find((n) => n !== leader)!;
      await waitFor(
        async () => ((await b.get(leader, '/standby-leader')).status === 200 ? true : undefined),
        JOIN_BOUND_MS,
        'standby leader',
      ).catch((e) => {
        throw new Error(`${String(e)}\n${b.logsMatching(LOG_RE, t0).join('\n')}`);
      });
      const ha = (await b.get(leader, '/ha')).json();
      expect(ha.role).toBe('standby_leader');
      await waitFor(
        async () => ((await b.get(leader, '/ha')).json().replication_state === 'in archive recovery' ? true : undefined),
        30_000,
        'in archive recovery',
      );
      expect((await b.get(leader, '/metrics')).body).toMatch(/^ha_database_in_archive_recovery(\{[^}]*\})? 1$/m);
      // Restored, not initdb'ed: A's system identifier; no WAL receiver on the standby leader.
      const sysA = (await a.psql('a1', 'select system_identifier from pg_control_system()')).trim();
      expect((await b.psql(leader, 'select system_identifier from pg_control_system()')).trim()).toBe(sysA);
      expect((await b.psql(leader, 'select count(*) from pg_stat_wal_receiver')).trim()).toBe('0');
      expect(b.logsMatching(/replica created by method pgbackrest/).length).toBeGreaterThan(0);
      // The rows archived before B existed are there.
      await waitFor(async () => ((await count(b, leader)) >= 20 ? true : undefined), 60_000, '20 rows on the standby leader');
      await b.waitForStreaming([other], JOIN_BOUND_MS);
      await noWalsenderOnA();
      figures.push(`B bootstrapped from the archive, standby leader ${leader}, ${other} streaming: ${Date.now() - t0} ms`);
    },
    2 * JOIN_BOUND_MS + 60_000,
  );

  it('rows written in A reach every member of B once their WAL segment is archived, not before', async () => {
    await a.psql('a1', "insert into dr select g, 'in segment' from generate_series(21, 50) g");
    // Not archived yet (no archive_timeout on A): B cannot have them, though its standby leader
    // asks the archive again within wal_retrieve_retry_interval (5 s) meanwhile.
    await sleep(WAL_RETRIEVE_RETRY_MS + 1000);
    expect(await count(b, leader)).toBe(20);
    const t0 = Date.now();
    const seg = await archiveNow();
    const archivedMs = Date.now() - t0;
    for (const n of b.nodes) await waitFor(async () => ((await count(b, n.name)) >= 50 ? true : undefined), 60_000, `50 rows on ${n.name}`);
    figures.push(
      `segment ${seg} archived ${archivedMs} ms after the switch; its rows on both members of B ${Date.now() - t0} ms after the switch`,
    );
    await noWalsenderOnA();
    await expect(b.psql(leader, "insert into dr values (1000, 'no')")).rejects.toThrow(/read-only/);
  }, 120_000);

  it(
    `no leader: a member with no data restores by its no_leader method, catches up from the archive and becomes the standby leader within ${(LEADER_GONE_MS + JOIN_BOUND_MS) / 1000} s`,
    async () => {
      await b.killAgent(leader);
      const pm = b.postmasterPid(leader);
      if (pm) await stopPid(pm, 'SIGKILL');
      await b.stopAgent(other);
      const pmOther = b.postmasterPid(other);
      if (pmOther) await stopPid(pmOther, 'SIGKILL');
      await rm(b.node(other).dataDir, { recursive: true, force: true });
      await a.psql('a1', "insert into dr select g, 'while B has no leader' from generate_series(51, 60) g");
      await archiveNow();
      await waitFor(async () => ((await b.etcdGet('leader')) === undefined ? true : undefined), LEADER_GONE_MS, 'the leader key expired');
      const t0 = Date.now();
      b.start(other);
      await waitFor(
        async () => ((await b.get(other, '/standby-leader')).status === 200 ? true : undefined),
        JOIN_BOUND_MS,
        `${other} standby leader`,
      ).catch((e) => {
        throw new Error(`${String(e)}\n${b.logsMatching(LOG_RE, t0).join('\n')}`);
      });
      expect(b.logsMatching(/no leader: creating the replica by a no_leader method/, t0).length).toBeGreaterThan(0);
      await waitFor(async () => ((await count(b, other)) >= 60 ? true : undefined), 60_000, `60 rows on ${other}`);
      await noWalsenderOnA();
      figures.push(`no leader: ${other} restored by its no_leader method and standby leader with every row: ${Date.now() - t0} ms`);
    },
    LEADER_GONE_MS + 2 * JOIN_BOUND_MS,
  );
});
