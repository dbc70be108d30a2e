/**
 * decideCycle with `database.use_db_rewind` (docs/ha.md "Rewind"): a diverged member is rewound
 * from the leader; a failed rewind is never tried again against the same leader timeline; with
 * remove_data_directory_on_rewind_failure it is re-cloned instead; data that pg_rewind cannot
 * handle falls back to remove_data_directory_on_diverged_timelines / staying stopped.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import { decideCycle, type CycleInput } from '../../src/domain/ha-cycle.ts';
import type { MemberData } from '../../src/domain/member.ts';
import type { LocalPosition } from '../../src/domain/timeline-history.ts';

const member = (name: string, extra: Partial<MemberData> = {}) => ({
  name,
  data: {
    conn_url: `postgres://127.0.0.1:${5432 + Number(name.slice(-1))}/postgres`,
    api_url: `http://127.0.0.1:800${name.slice(-1)}/ha`,
    state: 'running',
    role: 'replica',
    version: '0.1.0',
    ...extra,
  } as MemberData,
});

/** n2 leads on timeline 2, made by its own promotion at 500 on timeline 1. */
const view = (over: Partial<ClusterView> = {}): ClusterView => ({
  leader: { name: 'n2', leaseId: '1', revision: '1', createRevision: '1' },
  members: [member('n1'), member('n2', { role: 'primary', timeline: 2 })],
  initialize: '7000000000000000001',
  history: [[1, 500, 'no recovery target specified', '2026-01-01T00:00:00Z', 'n2']],
  ...over,
});

const rewindOn = (extra: Record<string, unknown> = {}) => withDefaults({ database: { use_db_rewind: true, ...extra } });

/** n1: a former primary, stopped. */
function input(local: LocalPosition | undefined, over: Partial<CycleInput> = {}, v: ClusterView = view()): CycleInput {
  return {
    name: 'n1',
    nowMs: 1_000_000,
    config: rewindOn(),
    view: v,
    dcsOk: true,
    holdsLock: false,
    db: { state: 'stopped', role: 'replica', busy: false },
    hasData: true,
    walBytes: 0n,
    timeline: local?.timeline ?? 0,
    ...(local ? { local } : {}),
    demoted: true,
    initializedByMe: false,
    tags: {},
    peers: [],
    ...over,
  };
}

/** A crashed former primary (pg_controldata `in production`) on timeline 1. */
const crashed: LocalPosition = { clusterState: 'in production', timeline: 1, checkpointLsn: 400n, minRecoveryLsn: 0n };
/** A former primary shut down cleanly past the switch point (500). */
const cleanPast: LocalPosition = { clusterState: 'shut down', timeline: 1, checkpointLsn: 600n, minRecoveryLsn: 0n };

describe('decideCycle with use_db_rewind', () => {
  it.each([
    ['crashed former primary (in production)', crashed],
    ['clean shutdown past the switch point', cleanPast],
  ])('%s, leader running as primary → rewind from the leader on its timeline', (_n, local) => {
    const r = decideCycle(input(local));
    expect(r.actions).toEqual([{ kind: 'rewind', leader: 'n2', timeline: 2 }]);
    expect(r.message).toMatch(/^running pg_rewind from n2: diverged from leader n2/);
    expect(r.diverged).toContain('diverged from leader n2');
  });

  it('also from crashed or start_failed (the machine accepts cmd.rewind there)', () => {
    expect(decideCycle(input(crashed, { db: { state: 'crashed', role: 'primary', busy: false } })).actions.map((a) => a.kind)).toEqual([
      'rewind',
    ]);
    expect(decideCycle(input(crashed, { db: { state: 'start_failed', role: 'replica', busy: false } })).actions.map((a) => a.kind)).toEqual(
      ['rewind'],
    );
  });

  it('not diverged (clean stop before the switch point) → start as a replica, no rewind', () => {
    const r = decideCycle(input({ ...cleanPast, checkpointLsn: 400n }));
    expect(r.actions).toEqual([{ kind: 'start', role: 'replica', leader: 'n2' }]);
  });

  it('the leader does not run as primary yet → wait, no rewind', () => {
    const r = decideCycle(input(crashed, {}, view({ members: [member('n1'), member('n2', { role: 'replica', timeline: 2 })] })));
    expect(r.actions).toEqual([]);
    expect(r.message).toContain('waiting for leader n2 to run as primary');
  });

  it('use_db_rewind off → the existing rules (stay stopped)', () => {
    const r = decideCycle(input(crashed, { config: withDefaults({ database: { use_db_rewind: false } }) }));
    expect(r.actions).toEqual([]);
    expect(r.diverged).toBeDefined();
  });

  it('nothing set: use_db_rewind is on by default → rewind', () => {
    expect(withDefaults({}).database.use_db_rewind).toBe(true);
    const r = decideCycle(input(crashed, { config: withDefaults({}) }));
    expect(r.actions.map((a) => a.kind)).toEqual(['rewind']);
  });

  it('a running replica that diverged stops first (pg_rewind needs a stopped data directory)', () => {
    const r = decideCycle(
      input(undefined, {
        db: { state: 'running', role: 'replica', busy: false },
        walBytes: 600n,
        timeline: 1,
        replication: { upstream: undefined, streaming: false },
        demoted: false,
      }),
    );
    expect(r.actions.map((a) => a.kind)).toEqual(['stop']);
    expect(r.message).toMatch(/^stopping to rewind: /);
  });

  describe('after a failed rewind', () => {
    const failure = { leader: 'n2', timeline: 2, reason: 'pg_rewind exited 1: could not connect to server' };

    it('against the same leader timeline, remove_data_directory_on_rewind_failure off → never again: stays stopped, saying why', () => {
      const r = decideCycle(
        input(crashed, { rewindFailure: failure, config: rewindOn({ remove_data_directory_on_rewind_failure: false }) }),
      );
      expect(r.actions).toEqual([]);
      expect(r.message).toContain('not retried');
      expect(r.diverged).toContain('pg_rewind from n2 failed: pg_rewind exited 1: could not connect to server');
    });

    it('even with remove_data_directory_on_diverged_timelines (the reference does not re-clone a failed rewind)', () => {
      const r = decideCycle(
        input(crashed, {
          rewindFailure: failure,
          config: rewindOn({ remove_data_directory_on_diverged_timelines: true, remove_data_directory_on_rewind_failure: false }),
        }),
      );
      expect(r.actions).toEqual([]);
    });

    it('with remove_data_directory_on_rewind_failure (the default) → reinitialize', () => {
      const r = decideCycle(
        input(crashed, { rewindFailure: failure, config: rewindOn({ remove_data_directory_on_rewind_failure: true }) }),
      );
      expect(r.actions).toEqual([{ kind: 'reinitialize' }]);
      expect(r.message).toMatch(/^reinitializing after a failed rewind: /);
      expect(decideCycle(input(crashed, { rewindFailure: failure, config: withDefaults({}) })).actions).toEqual([{ kind: 'reinitialize' }]);
    });

    it('pg_controldata unreadable after the failure → still no loop; re-cloned when allowed', () => {
      const keep = rewindOn({ remove_data_directory_on_rewind_failure: false });
      expect(decideCycle(input(undefined, { rewindFailure: failure, config: keep })).actions).toEqual([]);
      expect(decideCycle(input(undefined, { rewindFailure: failure, config: keep })).diverged).toContain('pg_rewind from n2 failed');
      const config = rewindOn({ remove_data_directory_on_rewind_failure: true });
      expect(decideCycle(input(undefined, { rewindFailure: failure, config })).actions).toEqual([{ kind: 'reinitialize' }]);
    });

    it('a failure against an earlier leader timeline does not block a rewind from the new one', () => {
      const v = view({
        leader: { name: 'n3', leaseId: '2', revision: '2', createRevision: '2' },
        members: [member('n1'), member('n2'), member('n3', { role: 'primary', timeline: 3 })],
        history: [
          [1, 500, 'x', '2026-01-01T00:00:00Z', 'n2'],
          [2, 900, 'x', '2026-01-01T00:01:00Z', 'n3'],
        ],
      });
      const r = decideCycle(input(crashed, { rewindFailure: failure }, v));
      expect(r.actions).toEqual([{ kind: 'rewind', leader: 'n3', timeline: 3 }]);
    });
  });

  describe('data pg_rewind cannot handle → a failed rewind: re-cloned by default', () => {
    const keep = rewindOn({ remove_data_directory_on_rewind_failure: false });
    it('neither wal_log_hints nor checksums → re-cloned (the default); stays stopped, saying so, with remove_data_directory_on_rewind_failure off', () => {
      const local = { ...crashed, rewindable: false };
      const byDefault = decideCycle(input(local, { config: withDefaults({}) }));
      expect(byDefault.actions).toEqual([{ kind: 'reinitialize' }]);
      expect(byDefault.message).toMatch(/^reinitializing: pg_rewind cannot repair the data: /);
      const r = decideCycle(input(local, { config: keep }));
      expect(r.actions).toEqual([]);
      expect(r.diverged).toContain('cannot rewind: the data directory has neither wal_log_hints = on nor data checksums');
      const config = rewindOn({ remove_data_directory_on_rewind_failure: false, remove_data_directory_on_diverged_timelines: true });
      expect(decideCycle(input(local, { config })).actions).toEqual([{ kind: 'reinitialize' }]);
    });

    it("a timeline with the leader's number made by another promotion at the same switch point → no rewind", () => {
      // n1 promoted to its own "timeline 2" at 500 too: pg_rewind would take timeline 2 as common.
      const local: LocalPosition = {
        clusterState: 'shut down',
        timeline: 2,
        checkpointLsn: 700n,
        minRecoveryLsn: 0n,
        history: [{ timeline: 1, switchLsn: 500n, reason: 'x' }],
        promotedBy: 'n1',
      };
      const v = view({
        members: [member('n1'), member('n2', { role: 'primary', timeline: 3 })],
        history: [
          [1, 500, 'x', '2026-01-01T00:00:00Z', 'n2'],
          [2, 800, 'x', '2026-01-01T00:01:00Z', 'n2'],
        ],
      });
      const r = decideCycle(input(local, { config: keep }, v));
      expect(r.actions).toEqual([]);
      expect(r.diverged).toContain('pg_rewind cannot tell them apart');
      expect(decideCycle(input(local, { config: withDefaults({}) }, v)).actions).toEqual([{ kind: 'reinitialize' }]);
    });
  });
});
