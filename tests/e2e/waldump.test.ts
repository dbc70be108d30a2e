/**
 * Where a crashed data directory's WAL ends, read with pg_waldump (src/postgres/waldump.ts), and
 * the receipt decode of a WAL range, against real PostgreSQL 15 (LocalPostgres, no agent):
 *
 * - a primary killed with SIGKILL: its WAL end is the insert position it had reached (every record
 *   it wrote is on disk: a kill, not a machine crash), over many crashes with records of every
 *   size, some crossing pages;
 * - a streaming replica that received everything, promoted after the primary's SIGKILL: the switch
 *   point of its new timeline (its history file) equals the crashed primary's WAL end — the
 *   comparison the divergence check makes (docs/ha.md "Divergence");
 * - the promoted replica, killed right after the promotion (no checkpoint since): its WAL is on
 *   timeline 2 while its last checkpoint is on timeline 1; the end is read on timeline 2;
 * - rows written on the old primary after the replica stopped receiving: its WAL end goes past
 *   the switch point, and readWalRange over [switch point, end) lists exactly those transactions,
 *   committed, with their relation.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLsn } from '../../src/domain/lsn.ts';
import { ReceiptBuilder, type WalRecord } from '../../src/domain/discarded.ts';
import { parseHistoryFile } from '../../src/domain/timeline-history.ts';
import { detectBinDir } from '../../src/postgres/bin-dir.ts';
import { LocalPostgres, type LocalPostgresOptions } from '../../src/postgres/local.ts';
import { freePorts } from '../support/ports.ts';
import { isAlive, sleep, waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

let dir = '';
let ports: number[] = [];
const started: LocalPostgres[] = [];
/** The replica's checkpointer, SIGSTOPped around its promotion (SIGKILLed in afterAll if a test left it). */
let checkpointer = 0;

const options = (name: string, port: number): LocalPostgresOptions => ({
  name,
  scope: 'waldump',
  dataDir: join(dir, name, 'data'),
  binDir: detectBinDir(),
  listen: { host: '127.0.0.1', port },
  socketDir: join(dir, name, 'sock'),
  superuser: { username: 'postgres', password: 'su-pass' },
  replication: { username: 'replicator', password: 'repl-pass' },
  pgHba: [],
});

/** SIGKILL of the postmaster and every child (a crash: no shutdown checkpoint); waits until gone. */
async function crash(pg: LocalPostgres): Promise<void> {
  const pid = await pg.postmasterPid();
  await pg.close();
  if (pid === undefined) throw new Error('no postmaster to crash');
  process.kill(pid, 'SIGKILL');
  await waitFor(async () => !isAlive(pid), 10_000, `postmaster ${pid} gone`);
  // Its children notice the postmaster's death and exit within moments.
  await sleep(300);
}

async function insertLsn(pg: LocalPostgres): Promise<bigint> {
  const rows = await pg.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
  return parseLsn(rows[0]!.lsn);
}

beforeAll(async () => {
  dir = await makeTempDir('ha-waldump-');
  ports = await freePorts(3);
});

afterAll(async () => {
  if (checkpointer && isAlive(checkpointer)) process.kill(checkpointer, 'SIGKILL');
  for (const pg of started) {
    await pg.close().catch(() => undefined);
    const pid = await pg.postmasterPid().catch(() => undefined);
    await pg.stop('immediate', 10_000).catch(() => undefined);
    if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  if (dir) await removeTempDir(dir);
});

describe("pg_waldump: where a crashed data directory's WAL ends", () => {
  let primary: LocalPostgres;
  let replica: LocalPostgres;

  it('a primary killed with SIGKILL: its WAL end is the insert position it had reached, whatever the record sizes', async () => {
    primary = new LocalPostgres(options('p1', ports[0]!));
    started.push(primary);
    await primary.initdb([]);
    await primary.configure({ role: 'primary', parameters: { fsync: 'off', wal_log_hints: 'on' } });
    await primary.start(30_000);
    await primary.postBootstrap();
    await primary.query('CREATE TABLE t (id bigint, pad text)');
    // Records of many sizes: the last one before the kill lands anywhere in a page, some cross one.
    const sizes = [1, 37, 200, 1000, 4000, 7000, 8150, 12000];
    for (const [i, size] of sizes.entries()) {
      await primary.query(`INSERT INTO t SELECT g, repeat('x', ${size}) FROM generate_series(1, ${1 + (i % 3)}) g`);
      const expected = await insertLsn(primary);
      await crash(primary);
      const end = await primary.walEnd();
      expect(end.timeline, `size ${size}`).toBe(1);
      expect(end.endLsn, `size ${size}: pg_current_wal_insert_lsn before the kill`).toBe(expected);
      expect(end.lastRecordLsn).toBeLessThan(end.endLsn);
      await primary.start(30_000);
    }
  });

  it("a replica that received everything, promoted after the primary's SIGKILL: the new timeline's switch point is the crashed primary's WAL end", async () => {
    replica = new LocalPostgres(options('r1', ports[1]!));
    started.push(replica);
    await replica.basebackup({ host: '127.0.0.1', port: ports[0]!, name: 'p1' });
    await replica.configure({
      role: 'replica',
      upstream: { host: '127.0.0.1', port: ports[0]!, name: 'p1' },
      parameters: { fsync: 'off', wal_log_hints: 'on' },
    });
    await replica.start(30_000);
    await primary.query("INSERT INTO t SELECT g, repeat('y', 3000) FROM generate_series(1, 5) g");
    const target = await insertLsn(primary);
    await waitFor(
      async () => {
        const st = await replica.probe(2000);
        return (st.receiveLsn ?? 0n) >= target && (st.replayLsn ?? 0n) >= target;
      },
      30_000,
      'replica caught up',
    );
    await crash(primary);
    // The replica's checkpointer is stopped before its promotion, so the promotion's checkpoint
    // cannot run: the next test needs WAL on timeline 2 under a last checkpoint on timeline 1.
    checkpointer = Number(
      (await replica.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"))[0]!.pid,
    );
    process.kill(checkpointer, 'SIGSTOP');
    await replica.promote(30_000);
    const history = parseHistoryFile(await replica.readTimelineHistory(2));
    const end = await primary.walEnd();
    expect(history).toHaveLength(1);
    expect(end).toMatchObject({ timeline: 1, endLsn: history[0]!.switchLsn });
  });

  it('killed right after its promotion (last checkpoint still on timeline 1): the end is read on timeline 2', async () => {
    await replica.query("INSERT INTO t SELECT g, 'z' FROM generate_series(1, 3) g");
    const expected = await insertLsn(replica);
    process.kill(checkpointer, 'SIGKILL');
    await crash(replica);
    const cd = await replica.controlData();
    expect(cd.clusterState).toBe('in production');
    expect(cd.checkpointTimeline, 'no checkpoint since the promotion').toBe(1);
    const end = await replica.walEnd();
    expect(end.timeline).toBe(2);
    expect(end.endLsn).toBe(expected);
  });

  it('rows written on the old primary past the switch point: its WAL end goes past it, and the range lists exactly those transactions', async () => {
    // The old primary p1 (timeline 1), started alone, writes rows nobody else has.
    await primary.configure({ role: 'primary', parameters: { fsync: 'off', wal_log_hints: 'on' } });
    await primary.start(30_000);
    const switchLsn = parseHistoryFile(await replica.readTimelineHistory(2))[0]!.switchLsn;
    const xids: number[] = [];
    for (let i = 0; i < 4; i++) {
      const rows = await primary.query<{ xid: string }>(
        `INSERT INTO t VALUES (${9000 + i}, 'lost') RETURNING (pg_current_xact_id()::text::bigint % 4294967296)::text AS xid`,
      );
      xids.push(Number(rows[0]!.xid));
    }
    const relfile = (await primary.query<{ p: string }>("SELECT pg_relation_filepath('t') AS p"))[0]!.p; // base/<db>/<relfilenode>
    await crash(primary);
    const end = await primary.walEnd();
    expect(end.timeline).toBe(1);
    expect(end.endLsn).toBeGreaterThan(switchLsn);
    const b = new ReceiptBuilder();
    const seen: WalRecord[] = [];
    await primary.readWalRange(1, switchLsn, end.endLsn, (r) => {
      seen.push(r);
      b.add(r);
    });
    expect(seen.length).toBeGreaterThan(0);
    const committed = b.transactions().filter((t) => t.status === 'committed');
    expect(committed.map((t) => t.xid).sort()).toEqual([...xids].sort());
    const [, db, rel] = relfile.split('/');
    for (const t of committed) expect(t.relations).toContain(`1663/${db}/${rel}`);
    expect(b.counts().committed).toBe(4);
  });
});
