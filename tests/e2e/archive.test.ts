/**
 * Backups and the WAL archive with real pgBackRest (issue 25; docs/backups.md), on a real 3-member
 * cluster (ttl 10, loop_wait 2, retry_timeout 3) with the recorded writer running throughout. The
 * default configuration except what is tested: `use_slots: false`, archive_mode/archive_command
 * pushing to a pgBackRest repository on the local file system, `database.recovery_conf.
 * restore_command` fetching from it (slowed by 1 s a segment so that a polled API sees the
 * catch-up), `wal_keep_size: 0` and a 32 MB max_wal_size so that the primary recycles its WAL, a
 * `backup` section (stanza-create, backup), and on node3 `create_replica_methods: [broken,
 * pgbackrest, basebackup]`.
 *
 * 1. node1 bootstraps, node2 joins by pg_basebackup; `hactl backup node1 --create` (POST /backup
 *    {"create": true}) creates the stanza and takes a full backup there; the WAL is archived.
 * 2. node3 joins: its method `broken` fails (the reason journaled, falling back to pgbackrest),
 *    pgBackRest's delta restore makes it (the primary serves no base backup meanwhile), and it
 *    streams.
 * 3. node2 is stopped; the primary writes and checkpoints past the WAL node2 needs (checked: the
 *    segment is gone from the primary's pg_wal); node2's agent is started again: it catches up from
 *    the archive (replication_state `in archive recovery`, ha_database_in_archive_recovery 1,
 *    GET /replica?replication_state=streaming 503, GET /cluster listing it so, meanwhile), then streams, and was never copied
 *    again (a file left in its data directory is still there).
 * 4. No acknowledged write lost, on any member.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, stopPid, waitFor } from '../support/processes.ts';
import { runHactl } from '../hactl/run-hactl.ts';
import { TestCluster } from './support/cluster.ts';
import { archiveCommand, backupInfo, backupSection, pgbackrest, restoreCommand, startArchivedPair } from './support/pgbackrest.ts';
import { assertNoLoss, startWriter, type RecordedWriter } from './support/writer.ts';
import { T } from './faults/timing.ts';

/** restore_command sleeps this long before each segment (see the module comment). */
const RESTORE_DELAY_S = 1;
/** Time the tools may take on a small database and a loaded 2-core machine (pgBackRest, PostgreSQL start and replay). */
const TOOLS_MS = 60_000;
/** A new member streaming: its agent's start and first cycles (2 × loop_wait), their DCS calls (2 × retry_timeout), plus the tools. */
const JOIN_BOUND_MS = (2 * T.loop_wait + 2 * T.retry_timeout) * 1000 + TOOLS_MS;
const LOG_RE = /clone|replica creation|method|basebackup|bootstrap|reinit|archive|backup|stream|start/i;

let c: TestCluster;
let writer: RecordedWriter | undefined;
const figures: string[] = [];

/** The WAL segment file name holding `lsn` on timeline `tli` (16 MB segments). */
function segmentOf(lsn: string, tli: number): string {
  const [hi, lo] = lsn.split('/').map((x) => BigInt(`0x${x}`));
  const segno = ((hi! << 32n) | lo!) / (16n * 1024n * 1024n);
  const hex = (n: bigint | number) => n.toString(16).toUpperCase().padStart(8, '0');
  return `${hex(tli)}${hex(segno / 256n)}${hex(segno % 256n)}`;
}

/** The value of an unlabelled-or-labelled gauge in a /metrics text, or undefined. */
function gauge(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

beforeAll(async () => {
  c = await TestCluster.create({
    nodes: 3,
    ttl: T.ttl,
    loopWait: T.loop_wait,
    retryTimeout: T.retry_timeout,
    dcsExtra: ['database: { use_slots: false }'],
    parameters: (n) => ({
      archive_mode: 'on',
      archive_command: archiveCommand(n, 'e2e'),
      wal_keep_size: '0',
      max_wal_size: '32MB',
      min_wal_size: '32MB',
    }),
    databaseExtra: (n) => [
      `recovery_conf: ${JSON.stringify({ restore_command: restoreCommand(n, 'e2e', RESTORE_DELAY_S) })}`,
      ...(n.name === 'node3'
        ? [
            'create_replica_methods: [broken, pgbackrest, basebackup]',
            `broken: ${JSON.stringify({ command: "sh -c 'echo no backup in this repository >&2; exit 3'", no_params: true })}`,
            `pgbackrest: ${JSON.stringify({ command: `${pgbackrest(n, 'e2e')} --delta --type=standby restore`, keep_data: true, no_params: true })}`,
          ]
        : []),
    ],
    topExtra: (n) => [backupSection(n, 'e2e')],
  });
  await startArchivedPair(c);
  writer = startWriter(c);
});

afterAll(async () => {
  await writer?.stop();
  if (figures.length) console.log(`archive figures:\n${figures.join('\n')}`);
  await c?.destroy();
});

describe('the WAL archive and backups with pgBackRest', () => {
  it('`hactl backup node1 --create` (POST /backup {"create": true}) creates the stanza and takes a full backup on the primary; the WAL is archived', async () => {
    const t0 = Date.now();
    const r = await runHactl(['-c', c.node('node1').configPath, 'backup', 'node1', '--create'], { timeoutMs: 180_000 });
    expect(r.code, `${r.stdout}${r.stderr}\n${c.logsMatching(LOG_RE, t0).join('\n')}`).toBe(0);
    expect(r.stdout).toMatch(/^Success: backup done in \d+\.\d s on member node1$/m);
    const info = await backupInfo(c, 'node1');
    expect(info[0]?.backup?.map((b) => b.type)).toEqual(['full']);
    // The archiver keeps up: the segment switched to now is archived soon after.
    const seg = (await c.psql('node1', 'select pg_walfile_name(pg_switch_wal())')).trim();
    await waitFor(
      async () => (await c.psql('node1', "select coalesce(last_archived_wal, '') from pg_stat_archiver")).trim() >= seg,
      30_000,
      `${seg} archived`,
    );
    expect((await c.get('node1', '/events?limit=500')).body).toContain('ha.backup.done');
    figures.push(`stanza-create + full backup: ${Date.now() - t0} ms`);
  });

  it(`a new member is made by pgBackRest's delta restore after its first method fails (reason journaled), and streams within ${JOIN_BOUND_MS / 1000} s`, async () => {
    const t0 = Date.now();
    let basebackupSeen = false;
    let watching = true;
    // The primary serves no base backup while node3 is made: no pg_basebackup walsender appears.
    const watch = (async () => {
      while (watching) {
        const n = await c
          .psql(
            'node1',
            "select count(*) from pg_stat_activity where backend_type = 'walsender' and application_name like '%basebackup%'",
            2000,
          )
          .catch(() => '0');
        if (Number(n.trim()) > 0) basebackupSeen = true;
        await sleep(200);
      }
    })();
    c.start('node3');
    try {
      await c.waitForStreaming(['node3'], JOIN_BOUND_MS);
    } finally {
      watching = false;
      await watch;
    }
    const joinMs = Date.now() - t0;
    const lines = c.logsMatching(/./, t0).filter((l) => l.includes(' node3 '));
    expect(
      lines.filter((l) => /replica creation method|replica created by method/.test(l)),
      lines.slice(-40).join('\n'),
    ).toEqual([
      expect.stringMatching(
        /replica creation method broken failed after \d+ s: .*exited 3.*no backup in this repository; falling back to pgbackrest/,
      ),
      expect.stringMatching(/replica created by method pgbackrest/),
    ]);
    expect(basebackupSeen, 'a pg_basebackup ran against the primary while node3 was made').toBe(false);
    const journal = (await c.get('node3', '/events?limit=500')).body;
    expect(journal).toContain('ha.clone.methodFailed');
    expect(journal).toContain('falling back to pgbackrest');
    expect(joinMs).toBeLessThanOrEqual(JOIN_BOUND_MS);
    figures.push(`node3 made by pgBackRest restore and streaming: ${joinMs} ms (bound ${JOIN_BOUND_MS})`);
  });

  it('`hactl reinit node3` uses the same list (pgbackrest after broken); `--from-leader` copies with pg_basebackup alone', async () => {
    const t0 = Date.now();
    const r = await runHactl(['-c', c.node('node3').configPath, 'reinit', 'node3', '--force', '--wait'], { timeoutMs: JOIN_BOUND_MS });
    expect(r.code, `${r.stdout}${r.stderr}\n${c.logsMatching(LOG_RE, t0).join('\n')}`).toBe(0);
    await c.waitForStreaming(['node3'], JOIN_BOUND_MS);
    const methods = () =>
      c
        .logsMatching(/replica creation method|replica created by method/, t0)
        .filter((l) => l.includes(' node3 '))
        .map((l) => (/method (\w+) failed/.exec(l) ?? /created by method (\w+)/.exec(l))?.[0]);
    expect(methods()).toEqual(['method broken failed', 'created by method pgbackrest']);

    const t1 = Date.now();
    const fromLeader = await runHactl(['-c', c.node('node3').configPath, 'reinit', 'node3', '--from-leader', '--force', '--wait'], {
      timeoutMs: JOIN_BOUND_MS,
    });
    expect(fromLeader.code, `${fromLeader.stdout}${fromLeader.stderr}\n${c.logsMatching(LOG_RE, t1).join('\n')}`).toBe(0);
    await c.waitForStreaming(['node3'], JOIN_BOUND_MS);
    // No method ran this time: the clone was pg_basebackup's alone.
    expect(c.logsMatching(/replica creation method|replica created by method/, t1).filter((l) => l.includes(' node3 '))).toEqual([]);
    figures.push(`node3 reinitialized by its methods in ${t1 - t0} ms, from the leader in ${Date.now() - t1} ms`);
  });

  it('a replica whose WAL the primary recycled catches up from the archive (in archive recovery, metric 1, /replica?replication_state=streaming 503), then streams, never copied again', async () => {
    const node2 = c.node('node2');
    const lsn = (await c.psql('node2', 'select pg_last_wal_replay_lsn()')).trim();
    const tli = Number((await c.psql('node2', 'select timeline_id from pg_control_checkpoint()')).trim());
    const needed = segmentOf(lsn, tli);

    // node2 stopped: its agent (SIGTERM), then its PostgreSQL if the agent left it running (fast shutdown).
    await c.stopAgent('node2');
    const pm = c.postmasterPid('node2');
    if (pm) await stopPid(pm, 'SIGINT', 60_000);
    const marker = join(node2.dataDir, 'ha-e2e-not-copied-again');
    writeFileSync(marker, 'left by tests/e2e/archive.test.ts\n');

    // The primary writes past wal_keep_size and max_wal_size and checkpoints: node2's segment is recycled.
    await c.psql('node1', 'create table if not exists filler (id int, pad text)', 10_000);
    for (let round = 0; round < 3; round++) {
      await c.psql('node1', 'insert into filler select g, repeat(md5(g::text), 30) from generate_series(1, 20000) g', 120_000);
      await c.psql('node1', 'select pg_switch_wal()', 10_000);
      await c.psql('node1', 'checkpoint', 120_000);
    }
    const oldest = await waitFor(
      async () => {
        await c.psql('node1', 'checkpoint', 120_000);
        const o = (await c.psql('node1', "select min(name) from pg_ls_waldir() where name ~ '^[0-9A-F]{24}$'")).trim();
        return o > needed ? o : undefined;
      },
      60_000,
      `the primary's pg_wal past ${needed}`,
    );
    const current = (await c.psql('node1', 'select pg_walfile_name(pg_current_wal_lsn())')).trim();
    const segments = parseInt(current.slice(8), 16) - parseInt(needed.slice(8), 16);
    const bound =
      (2 * T.loop_wait + 2 * T.retry_timeout + Math.max(2 * T.loop_wait, T.retry_timeout)) * 1000 +
      segments * (RESTORE_DELAY_S + 2) * 1000 +
      TOOLS_MS;

    const t0 = Date.now();
    c.start('node2');
    let seen: { state: string; metric?: number; streamingCheck: number; at: number } | undefined;
    let listedInArchiveRecovery = false;
    const streaming = await waitFor(
      async () => {
        const [ha, cluster] = await Promise.all([
          c.get('node2', '/ha').then((r) => r.json()),
          c.get('node1', '/cluster').then((r) => r.json()),
        ]);
        const listed = (cluster?.members as Array<{ name: string; state: string }> | undefined)?.find((m) => m.name === 'node2');
        if (listed?.state === 'in archive recovery') listedInArchiveRecovery = true;
        if (ha?.replication_state === 'in archive recovery' && !seen) {
          const [metrics, check] = await Promise.all([c.get('node2', '/metrics'), c.get('node2', '/replica?replication_state=streaming')]);
          const metric = gauge(metrics.body, 'ha_database_in_archive_recovery');
          seen = {
            state: ha.replication_state,
            streamingCheck: check.status,
            at: Date.now() - t0,
            ...(metric !== undefined ? { metric } : {}),
          };
        }
        if (ha?.replication_state !== 'streaming') return undefined;
        return (await c.get('node2', '/replica?replication_state=streaming')).status === 200 ? Date.now() - t0 : undefined;
      },
      bound,
      'node2 streaming again',
      150,
    ).catch((e) => {
      throw new Error(`${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}\n==== node2\n${node2.output.slice(-6000)}`);
    });
    figures.push(
      `node2 needed ${needed}, the primary kept ${oldest}..${current} (${segments} segments behind); archive recovery seen at ${seen?.at} ms, streaming at ${streaming} ms (bound ${bound})`,
    );
    expect(seen, 'node2 was seen in archive recovery').toBeDefined();
    expect(seen).toMatchObject({ state: 'in archive recovery', metric: 1, streamingCheck: 503 });
    expect(listedInArchiveRecovery, "GET /cluster listed node2's state as in archive recovery").toBe(true);
    const metrics = (await c.get('node2', '/metrics')).body;
    expect(gauge(metrics, 'ha_database_in_archive_recovery')).toBe(0);
    expect(gauge(metrics, 'ha_database_streaming')).toBe(1);
    expect(existsSync(marker), 'node2 was copied again (its data directory was emptied)').toBe(true);
    expect(
      c.logsMatching(/bootstrap from|reinitializ|replica created|basebackup/i, t0).filter((l) => l.includes(' node2 ')),
      'node2 was copied again',
    ).toEqual([]);
  });

  it('no acknowledged write is lost, on any member', async () => {
    const records = await writer!.stop();
    writer = undefined;
    expect(records.length).toBeGreaterThan(0);
    const report = await assertNoLoss(c, records, { timeoutMs: 60_000 });
    figures.push(`${report.acknowledged} acknowledged writes on ${report.leader} and ${JSON.stringify(report.replicas)}`);
  });
});
