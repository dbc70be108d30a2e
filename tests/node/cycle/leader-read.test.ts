/**
 * LeaderPositionRead: the leader's position is handed to the cycle only when the leader's probe
 * behind it started after the replica last received WAL (finding 26) and stopped streaming: dated
 * by the document's probe_age_ms (finding 32), else asked more than 1 s after.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { DYNAMIC_DEFAULTS } from '../../../src/domain/dynamic-config.ts';
import type { PgStatus } from '../../../src/domain/pg-status.ts';
import { LeaderPositionRead } from '../../../src/node/cycle/leader-read.ts';

const T0 = 1_767_225_600_000;
const config = DYNAMIC_DEFAULTS; // loop_wait 10 s, retry_timeout 10 s: grace 20 s

const view: ClusterView = {
  initialize: '7000000000000000001',
  leader: { name: 'n1', leaseId: '1', revision: '1', createRevision: '1' },
  history: [],
  members: [
    {
      name: 'n1',
      data: {
        api_url: 'http://n1:8008/ha',
        conn_url: 'postgres://n1/postgres',
        state: 'running',
        role: 'primary',
        version: '0',
        timeline: 1,
      },
    },
  ],
};

/** A stalled replica's probe at `atMs` whose WAL ends at `wal`. */
const probe = (atMs: number, wal: bigint): PgStatus => ({
  atMs,
  inRecovery: true,
  serverVersion: 150000,
  postmasterStartTime: '',
  timeline: 1,
  receiveLsn: wal,
  replayLsn: wal,
  streaming: false,
  replication: [],
  pendingRestart: {},
  slots: {},
});

/** The leader answers with its flush position `leaderWal()` at the time of each request. */
function reader(leaderWal: () => number) {
  const asked: number[] = [];
  const read = new LeaderPositionRead(async () => {
    asked.push(leaderWal());
    return { role: 'primary', state: 'running', timeline: 1, xlog: { location: leaderWal() } };
  });
  const at = (s: number, wal: bigint) =>
    read.positionIfStalled(
      view,
      { name: 'n2', probe: probe(T0 + s * 1000, wal), notStreamingSinceMs: T0, configuredFor: 'n1', config },
      T0 + s * 1000,
    );
  return { at, asked };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('LeaderPositionRead', () => {
  it('a replica whose WAL stood still since it stopped streaming gets the leader position read after the grace', async () => {
    const { at } = reader(() => 90);
    expect(at(1, 100n)).toBeUndefined();
    expect(at(11, 100n)).toBeUndefined(); // within the grace: no read
    expect(at(21, 100n)).toBeUndefined(); // the read starts
    await settle();
    expect(at(31, 100n)).toEqual({ timeline: 1, walBytes: 90n });
  });

  it('WAL received between two cycles (no probe saw it stream) voids the earlier answer: finding 26', async () => {
    let leader = 90;
    const { at } = reader(() => leader);
    at(1, 90n);
    at(11, 90n);
    at(21, 90n); // read: 90
    await settle();
    leader = 120; // the leader writes on, the replica streams it without any probe seeing it stream
    // The older answer (90) would make the local 120 look like another lineage.
    expect(at(31, 120n)).toBeUndefined();
    await settle();
    expect(at(41, 120n)).toBeUndefined(); // within the grace after the WAL last moved
    await settle();
    expect(at(51, 120n)).toBeUndefined(); // a new read starts (asked after the WAL stopped)
    await settle();
    expect(at(61, 120n)).toEqual({ timeline: 1, walBytes: 120n });
  });

  it('an answer from a probe older than the stall does not count, however late it was asked: finding 32', async () => {
    // The leader's agent was frozen: it answers from a probe taken 40 s before, when its
    // PostgreSQL had flushed 90; it has streamed 120 to this replica since.
    let ageMs = 40_000;
    const read = new LeaderPositionRead(async () => ({
      role: 'primary',
      state: 'running',
      timeline: 1,
      xlog: { location: 90 },
      probe_age_ms: ageMs,
    }));
    const at = (s: number) =>
      read.positionIfStalled(
        view,
        { name: 'n2', probe: probe(T0, 120n), notStreamingSinceMs: T0, configuredFor: 'n1', config },
        T0 + s * 1000,
      );
    expect(at(21)).toBeUndefined(); // the read starts, 21 s after the stall
    await settle();
    expect(at(31)).toBeUndefined(); // probed 19 s before the stall: no sign of another lineage
    await settle(); // the read started at 31 s answers the same
    expect(at(35)).toBeUndefined();
    // A fresh probe (40 ms old) read after the stall counts.
    ageMs = 40;
    expect(at(41)).toBeUndefined(); // a new read starts (loop_wait since the last)
    await settle();
    expect(at(42)).toEqual({ timeline: 1, walBytes: 90n });
  });

  it('a streaming replica or one following another member gets none', async () => {
    const read = new LeaderPositionRead(async () => ({ role: 'primary', state: 'running', timeline: 1, xlog: { location: 1 } }));
    const streaming = { ...probe(T0 + 30_000, 5n), streaming: true };
    expect(
      read.positionIfStalled(
        view,
        { name: 'n2', probe: streaming, notStreamingSinceMs: undefined, configuredFor: 'n1', config },
        T0 + 30_000,
      ),
    ).toBeUndefined();
    expect(
      read.positionIfStalled(
        view,
        { name: 'n2', probe: probe(T0 + 30_000, 5n), notStreamingSinceMs: T0, configuredFor: 'n3', config },
        T0 + 30_000,
      ),
    ).toBeUndefined();
  });
});
