/**
 * The deterministic simulation (src/sim/, docs/simulation.md): the same seed gives the same
 * run, a run of the real agent over random schedules breaks no invariant, and planted bugs are
 * caught.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { Dcs } from '../../src/dcs/dcs.ts';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { InvariantChecker } from '../../src/sim/invariants.ts';
import { runSchedule, simulate, type RunOptions } from '../../src/sim/run.ts';
import type { SimPg } from '../../src/sim/sim-pg.ts';
import { flushContinuations, SimClock } from '../../src/sim/sim-clock.ts';
import { Prng } from '../../src/sim/prng.ts';
import { drawFaults, failsafeOf, syncModeOf, type Fault, type FaultKind } from '../../src/sim/world.ts';

const dir = mkdtempSync(join(tmpdir(), 'ha-sim-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Asynchronous (sync: 'off'): the planted-bug schedules below were chosen in that mode; synchronous ones pass `sync`. */
const BASE: RunOptions = { nodes: 3, steps: 60, freeze: false, sync: 'off' };
/** The fault kinds of the first PRNG stream without freeze (the draw the planted bugs' random schedules were calibrated on). */
const FIRST_STREAM_KINDS: FaultKind[] = ['dcs-partition', 'net-partition', 'pg-crash', 'agent-crash', 'switchover', 'heal'];

function quiet() {
  const lines: string[] = [];
  return { lines, out: (l: string) => lines.push(l), err: () => undefined };
}

describe('SimClock', () => {
  it('fires timers in (due, sequence) order and runs continuations between them', async () => {
    const clock = new SimClock(0);
    const seen: string[] = [];
    clock.schedule(20, () => seen.push('b'));
    clock.schedule(10, () => {
      seen.push('a');
      void Promise.resolve().then(() => seen.push('a-continuation'));
    });
    clock.schedule(10, () => seen.push('a2'));
    await clock.runUntil(15);
    expect(seen).toEqual(['a', 'a-continuation', 'a2']);
    expect(clock.now()).toBe(15);
    await clock.runUntil(30);
    expect(seen.at(-1)).toBe('b');
  });

  it('holds a frozen node view and drops a killed one', async () => {
    const clock = new SimClock(0);
    const view = clock.view();
    const seen: string[] = [];
    view.setTimeout(() => seen.push('t1'), 10);
    view.freeze();
    await clock.runUntil(100);
    expect(seen).toEqual([]);
    view.thaw();
    await clock.runUntil(100);
    expect(seen).toEqual(['t1']);
    view.setTimeout(() => seen.push('t2'), 10);
    view.kill();
    await clock.runUntil(200);
    await flushContinuations();
    expect(seen).toEqual(['t1']);
  });

  it('a slow node view runs completions in the order they were ready, also once the lag ends (finding 11)', async () => {
    const clock = new SimClock(0);
    const view = clock.view();
    const seen: string[] = [];
    view.setLag(1000);
    await clock.runUntil(100);
    view.deliver(() => seen.push('ready at 100'));
    await clock.runUntil(500);
    view.setLag(0);
    view.deliver(() => seen.push('ready at 500'));
    view.setTimeout(() => seen.push('timer due at 600'), 100);
    await clock.runUntil(1099);
    expect(seen).toEqual([]);
    await clock.runUntil(1100);
    expect(seen).toEqual(['ready at 100', 'ready at 500', 'timer due at 600']);
    // The backlog drained: on time again.
    view.deliver(() => seen.push('ready at 1100'));
    expect(seen.at(-1)).toBe('ready at 1100');
  });

  it('Prng is a pure function of its seed', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    expect(Array.from({ length: 5 }, () => a.next())).toEqual(Array.from({ length: 5 }, () => b.next()));
  });
});

describe('invariants', () => {
  const pg = (name: string, writable: boolean) => ({ name, timeline: 1, acceptsWrites: () => writable }) as unknown as SimPg;
  const agent = () => 'up';

  it('leader-lease: a writer needs the leader key in its name on a live lease, except while bootstrapping', () => {
    const c = new InvariantChecker(() => 0);
    const pgs = [pg('n1', true), pg('n2', false)];
    c.checkLease(pgs, 1000, { holder: 'n1', liveUntilMs: 1001 }, false, agent);
    c.checkLease(pgs, 1000, undefined, true, agent);
    c.checkLease([pg('n1', false)], 1000, undefined, false, agent);
    expect(c.violations).toEqual([]);
    c.checkLease(pgs, 1000, { holder: 'n1', liveUntilMs: 1000 }, false, agent);
    expect(c.violations.map((v) => v.message)).toEqual([
      "n1 (timeline 1) accepts writes as primary but its leader key's lease ran out 0 ms ago (not renewed within ttl); its agent: up",
    ]);
    const d = new InvariantChecker(() => 0);
    d.checkLease(pgs, 1000, { holder: 'n2', liveUntilMs: 5000 }, false, agent);
    expect(d.violations[0]!.message).toContain('the leader key names n2');
  });

  it('promotion-lag: behind the optime or a reachable member by more than maximum_lag_on_failover', () => {
    const c = new InvariantChecker(() => 0);
    const p = pg('n2', false);
    c.checkPromotion(p, 1000n, 1100n, 100n, [{ name: 'n3', lsn: 1100n }]);
    c.checkPromotion(p, 1000n, 0n, 100n, []);
    expect(c.violations).toEqual([]);
    c.checkPromotion(p, 1000n, 1101n, 100n, []);
    expect(c.violations[0]!.message).toBe(
      "n2 promoted at WAL 1000, 101 bytes behind the leader's last optime 1101 (maximum_lag_on_failover 100)",
    );
    const d = new InvariantChecker(() => 0);
    d.checkPromotion(p, 1000n, 900n, 100n, [{ name: 'n3', lsn: 1200n }]);
    expect(d.violations[0]!.message).toBe(
      'n2 promoted at WAL 1000, 200 bytes behind n3 (WAL 1200) which it could reach (maximum_lag_on_failover 100)',
    );
  });
});

describe('fault schedules', () => {
  it('are a function of the seed; freeze only with the option; agent outages shorter than the lease', () => {
    const opts = { nodes: 3, steps: 200, stepMs: 500, freeze: false };
    expect(drawFaults(9, opts)).toEqual(drawFaults(9, opts));
    const safe = Array.from({ length: 30 }, (_, i) => drawFaults(i, opts)).flat();
    expect(safe.some((f) => f.kind === 'freeze')).toBe(false);
    for (const f of safe) if (f.kind === 'agent-crash') expect(f.steps * 500).toBeLessThan(10_000 - 2_000);
    const withFreeze = Array.from({ length: 30 }, (_, i) => drawFaults(i, { ...opts, freeze: true })).flat();
    expect(withFreeze.some((f) => f.kind === 'freeze')).toBe(true);
  });
});

describe('ha simulate', () => {
  it('the command line: report on stdout, last line, exit 0', () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const stdout = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'src/cli/ha.ts', 'simulate', '--schedules', '2', '--seed', '3', '--kinds', 'pg-crash,switchover'],
      {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    expect(stdout.trim().split('\n').at(-1)).toBe('2 schedules, 0 violations');
    // Freeze is drawn by default since findings 16 and 17; --no-freeze leaves it out.
    expect(stdout).toContain('freeze faults: on');
    const off = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'src/cli/ha.ts', 'simulate', '--schedules', '1', '--seed', '3', '--no-freeze', '--kinds', 'pg-crash'],
      {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    expect(off).toContain('freeze faults: off');
  });

  it('same seed twice: byte-identical report and journal', async () => {
    const run = async (n: number) => {
      const q = quiet();
      const journalPath = join(dir, `det-${n}.jsonl`);
      const summary = await simulate({ schedules: 4, seed: 5, nodes: 3, steps: 60, freeze: false, journalPath, ...q });
      return { text: q.lines.join('\n'), summary, journal: summary.firstFailure ? readFileSync(journalPath, 'utf8') : '' };
    };
    const a = await run(1);
    const b = await run(2);
    expect(a.text.replaceAll('det-1', 'det-N')).toBe(b.text.replaceAll('det-2', 'det-N'));
    expect(a.journal).toBe(b.journal);
    expect(a.text.split('\n').at(-1)).toBe(`4 schedules, ${a.summary.violations} violations`);
  });

  it('50 schedules of the real agent break no invariant', async () => {
    const q = quiet();
    // The defaults of `ha simulate` (what CI runs): every kind, freeze too (since findings 16 and 17), failsafe_mode drawn.
    const summary = await simulate({ schedules: 50, seed: 1, nodes: 3, steps: 60, freeze: true, ...q });
    expect(summary.violations, q.lines.join('\n')).toBe(0);
    expect(summary.exitCode).toBe(0);
    expect(q.lines.at(-1)).toBe('50 schedules, 0 violations');
    // Faults were injected, failovers happened, commits were acknowledged.
    expect(summary.byFault['pg-crash']).toBeGreaterThan(0);
    expect(summary.byFault['switchover']).toBeGreaterThan(0);
    expect(summary.acked).toBeGreaterThan(1000);
    // Synchronous modes are drawn from the seed by default.
    expect(summary.byMode.off).toBeLessThan(50);
    expect(summary.byMode.quorum).toBeGreaterThan(0);
    // Slow loops, message delays and failsafe_mode are drawn by default too.
    expect(summary.byFault['slow-loop']).toBeGreaterThan(0);
    expect(summary.byFault['net-delay']).toBeGreaterThan(0);
    expect(summary.byFault['freeze']).toBeGreaterThan(0);
    expect(summary.failsafeSchedules).toBeGreaterThan(0);
    expect(summary.failsafeSchedules).toBeLessThan(50);
  });

  /** The leader's DCS partition from step 2 for 40 steps, for each member in turn (one of them leads). */
  async function partitionEachMember(plant: RunOptions['plant']) {
    const found: { atMs: number; partitionEndMs: number; invariant: string }[] = [];
    for (const node of ['n1', 'n2', 'n3']) {
      const faults: Fault[] = [{ kind: 'dcs-partition', at: 2, node, steps: 40 }];
      const { result } = await runSchedule(7, { ...BASE, faults, ...(plant ? { plant } : {}) });
      const partitionEndMs = (result.faultsFromMs ?? 0) + 42 * 500;
      for (const v of result.violations) found.push({ atMs: v.atMs, partitionEndMs, invariant: v.invariant });
    }
    return found.filter((f) => f.atMs < f.partitionEndMs);
  }

  it('the real agent: a partitioned leader demotes before another member promotes', async () => {
    expect(await partitionEachMember(undefined)).toEqual([]);
  });

  /** A DCS client whose renewals always succeed: its agent keeps leading after it lost its lock. */
  const alwaysRenews = (dcs: Dcs): Dcs =>
    new Proxy(dcs, {
      get(t, prop) {
        if (prop === 'keepalive') return () => t.keepalive().catch(() => undefined);
        if (prop === 'updateLeader')
          return (rev: string) =>
            t.updateLeader(rev).then(
              () => true,
              () => true,
            );
        const v = (t as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });

  it('planted bug: a DCS client whose renewals always succeed (a leader that keeps running after losing its lock)', async () => {
    const found = await partitionEachMember({ wrapDcs: alwaysRenews });
    expect(found.map((f) => f.invariant)).toContain('single-writer');
    expect(found.map((f) => f.invariant)).toContain('leader-lease');
  });

  it('planted bug: renewals that always succeed, every member cut from the DCS: leader-lease catches it with no second writer', async () => {
    // Nobody can take over, so single-writer cannot see it while the partition lasts: the leader
    // writes on a lease the store let run out ttl after its last real renewal.
    const faults: Fault[] = ['n1', 'n2', 'n3'].map((node) => ({ kind: 'dcs-partition', at: 2, node, steps: 40 }));
    const clean = await runSchedule(7, { ...BASE, faults });
    expect(clean.result.violations).toEqual([]);
    const { result } = await runSchedule(7, { ...BASE, faults, plant: { wrapDcs: alwaysRenews } });
    const partitionEndMs = (result.faultsFromMs ?? 0) + 42 * 500;
    const during = result.violations.filter((v) => v.atMs < partitionEndMs);
    expect(during.map((v) => v.invariant)).toEqual(['leader-lease']);
    expect(during[0]!.message).toMatch(/lease ran out \d+ ms ago/);
  });

  it('planted bug: a member whose PostgreSQL reports more WAL than it has wins the race while lagging (promotion-lag)', async () => {
    // Seed 7 bootstraps with n1 leading. n3 is cut from n1 (it stops streaming and lags by about
    // 2 MiB: writes of 40–80 kB a step), then n1 loses the DCS: n2 (up to date) and n3 race.
    const faults: Fault[] = [
      { kind: 'net-partition', at: 2, node: 'n1', peer: 'n3', steps: 45 },
      { kind: 'dcs-partition', at: 40, node: 'n1', steps: 20 },
    ];
    const writeBytes = [40_000, 80_000] as const;
    // The real agent: n3 refuses (its lag behind the leader's optime exceeds maximum_lag_on_failover), n2 wins.
    const clean = await runSchedule(7, { ...BASE, faults, plant: { writeBytes } });
    expect(clean.result.violations).toEqual([]);
    // n3's PostgreSQL reports 8 MiB more than it has: n3 looks within the lag and ahead of n2.
    const { result } = await runSchedule(7, { ...BASE, faults, plant: { writeBytes, pgBugs: { inflateReplicaWal: { n3: 8 << 20 } } } });
    expect(result.violations.map((v) => v.invariant)).toEqual(['promotion-lag']);
    expect(result.violations[0]!.message).toMatch(/^n3 promoted at WAL \d+, \d+ bytes behind the leader's last optime/);
    expect(result.lost).toBeGreaterThan(clean.result.lost);
  });

  it('planted bug: a data directory whose promotion marker is never read follows a diverged leader (diverged-streaming)', async () => {
    // Finding 3 of docs/simulation.md: two "timeline 2"s made at one switch point; identical
    // history files, only the promotion marker tells them apart.
    const faults: Fault[] = [
      { kind: 'switchover', at: 0, node: 'n3' },
      { kind: 'dcs-partition', at: 1, node: 'n3', steps: 29 },
    ];
    const clean = await runSchedule(197, { ...BASE, faults });
    expect(clean.result.violations).toEqual([]);
    const { result } = await runSchedule(197, { ...BASE, faults, plant: { pgBugs: { losePromotionMarker: true } } });
    expect(result.violations.map((v) => v.invariant)).toContain('diverged-streaming');
  });

  /**
   * A DCS client that hides the `sync` key from its agent unless the key names this member as
   * leader: the leader still runs the protocol (its sync manager sees its own key), but in the
   * leader race every other member reads "no sync key" and races by the asynchronous rules (lag,
   * no peer ahead). Its key writes keep working (a create-only write is turned into a
   * compare-and-set on the real revision), so such a member may promote.
   */
  const ignoresSyncKey = (dcs: Dcs, name: string): Dcs => {
    const hide = (v: ClusterView): ClusterView => {
      if (!v.sync || v.sync.value.leader === name) return v;
      const { sync: _hidden, ...rest } = v;
      return rest as ClusterView;
    };
    return new Proxy(dcs, {
      get(t, prop) {
        if (prop === 'view') return () => hide(t.view());
        if (prop === 'refresh') return () => t.refresh().then(hide);
        if (prop === 'setSync')
          return (value: Parameters<Dcs['setSync']>[0], rev?: string) =>
            t.setSync(value, rev === '0' ? (t.view().sync?.revision ?? '0') : rev);
        const v = (t as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  };

  it('synchronous modes are drawn from the seed; every mode runs with and without use_db_rewind', () => {
    const modes = Array.from({ length: 16 }, (_, i) => syncModeOf(i));
    expect(modes.slice(0, 8)).toEqual(['off', 'off', 'true', 'true', 'quorum', 'quorum', 'true+strict', 'true+strict']);
    expect(modes.slice(8)).toEqual(['off', 'off', 'true', 'true', 'quorum', 'quorum', 'quorum+strict', 'quorum+strict']);
  });

  it('planted bug: a leader race that ignores the sync key loses acknowledged commits (sync-no-loss)', async () => {
    // Seed 7 bootstraps with n1 leading. n3 is cut from n1 and n2 from step 20 (it stops
    // streaming: the leader takes it out of synchronous_standby_names and the key, commits wait
    // for n2 only), then n1 and n2 lose the DCS at step 26: only n3 can take the lock, ~6 steps
    // behind, within maximum_lag_on_failover.
    const faults: Fault[] = [
      { kind: 'net-partition', at: 20, node: 'n1', peer: 'n3', steps: 30 },
      { kind: 'net-partition', at: 20, node: 'n2', peer: 'n3', steps: 30 },
      { kind: 'dcs-partition', at: 26, node: 'n1', steps: 20 },
      { kind: 'dcs-partition', at: 26, node: 'n2', steps: 20 },
    ];
    for (const sync of ['true', 'quorum', 'true+strict', 'quorum+strict'] as const) {
      // The real agent: n3 is not in the sync key (quorum: cannot gather the votes) and waits.
      const clean = await runSchedule(7, { ...BASE, faults, sync });
      expect(clean.result.violations, sync).toEqual([]);
      expect(clean.result.lost, sync).toBe(0);
      const { result } = await runSchedule(7, { ...BASE, faults, sync, plant: { wrapDcs: ignoresSyncKey } });
      // The former leader's receipt then lists those acknowledged commits as it discards them:
      // discarded-receipt sees the same loss from the other side (where it sees it).
      expect(result.violations[0]!.invariant, sync).toBe('sync-no-loss');
      expect(
        result.violations.map((v) => v.invariant).filter((v) => v !== 'sync-no-loss' && v !== 'discarded-receipt'),
        sync,
      ).toEqual([]);
      expect(result.violations[0]!.message).toMatch(
        /^n3 \(timeline 2, WAL to \d+\) accepts writes without \d+ of \d+ acknowledged commits/,
      );
    }
    // Asynchronous mode: the same promotion loses commits too, a figure and not a violation.
    const off = await runSchedule(7, { ...BASE, faults, sync: 'off', plant: { wrapDcs: ignoresSyncKey } });
    expect(off.result.violations).toEqual([]);
  });

  it('planted bug: the sync key ignored in the race, random schedules: the simulator finds a loss', async () => {
    const q = quiet();
    // Seeds 1…400 in mode `true` with the planted bug: the first loss is seed 324 (the unmodified
    // agent breaks nothing there; it was 215 before replicas followed a new leader at once). The async standby ships WAL in the same step as the
    // synchronous one, so a loss needs it to lag first: a few schedules in a few hundred.
    const summary = await simulate({
      schedules: 20,
      seed: 320,
      nodes: 3,
      steps: 60,
      freeze: false,
      faultKinds: FIRST_STREAM_KINDS,
      sync: 'true',
      failsafe: false,
      plant: { wrapDcs: ignoresSyncKey },
      ...q,
    });
    expect(summary.byInvariant['sync-no-loss'], q.lines.join('\n')).toBeGreaterThan(0);
    expect(summary.firstFailure?.seed).toBe(324);
    const clean = await runSchedule(324, { ...BASE, sync: 'true' });
    expect(clean.result.violations).toEqual([]);
  });

  it('finding 8: a quorum vote read from a stale status document lost an acknowledged commit (now none)', async () => {
    // Seed 469461454 (mode quorum+strict): n3 restarts after a crash, n2 (the switchover's
    // candidate) is cut from the DCS; the leader n1 hands over, and n3 won the race with n2's vote
    // as n2's last probe showed it — before n2 received the commit acknowledged through it.
    const faults: Fault[] = [
      { kind: 'agent-crash', at: 18, node: 'n2', steps: 12 },
      { kind: 'heal', at: 23 },
      { kind: 'dcs-partition', at: 35, node: 'n3', steps: 17 },
      { kind: 'dcs-partition', at: 45, node: 'n2', steps: 20 },
      { kind: 'pg-crash', at: 51, node: 'n3' },
      { kind: 'switchover', at: 52, node: 'n2' },
    ];
    expect(syncModeOf(469461454)).toBe('quorum+strict');
    const { result } = await runSchedule(469461454, { nodes: 3, steps: 60, freeze: false, faults });
    expect(result.sync).toBe('quorum+strict');
    expect(result.violations).toEqual([]);
    expect(result.lost).toBe(0);
  });

  it('failsafe_mode is drawn from the seed; a leader cut from the DCS stays primary while every member accepts its POST /failsafe', async () => {
    expect(Array.from({ length: 64 }, (_, i) => failsafeOf(i)).filter(Boolean)).toHaveLength(32);
    expect([failsafeOf(15), failsafeOf(16), failsafeOf(32), failsafeOf(48)]).toEqual([false, true, false, true]);
    // Seed 7: n1 leads. Every member cut from the DCS for 30 steps: with failsafe the leader keeps
    // acknowledging (its peers accept its calls), without it demotes; no invariant breaks.
    const faults: Fault[] = ['n1', 'n2', 'n3'].map((node) => ({ kind: 'dcs-partition', at: 2, node, steps: 30 }));
    const on = await runSchedule(7, { ...BASE, faults, failsafe: true });
    const off = await runSchedule(7, { ...BASE, faults, failsafe: false });
    expect(on.result.violations).toEqual([]);
    expect(off.result.violations).toEqual([]);
    expect(on.result.failsafe).toBe(true);
    expect(on.result.failsafeAccepts).toBeGreaterThan(0);
    expect(off.result.failsafeAccepts).toBe(0);
    expect(on.result.acked).toBeGreaterThan(off.result.acked);
    // A network partition between the leader and one member: its POSTs time out, it demotes.
    const cut = await runSchedule(7, {
      ...BASE,
      faults: [...faults, { kind: 'net-partition', at: 10, node: 'n1', peer: 'n2', steps: 10 }],
      failsafe: true,
    });
    expect(cut.result.violations).toEqual([]);
    expect(cut.result.acked).toBeLessThan(on.result.acked);
  });

  describe('finding 10: failsafe mode (shrunk schedules of --failsafe draw, seeds 777000…786999)', () => {
    it('seed 779320 (liveness-primary): a switchover to a member the failsafe key does not list waits for the key', async () => {
      // n2's member key expired while it was cut from the DCS, so the leader n1 rewrote the
      // failsafe key without it; right after the heal the operator asks for a switchover to n2.
      // n1 handed over, n2 (unlisted) could never win the race and the others deferred to the
      // candidate: no primary. Now n1 waits one cycle for the key to list n2.
      const faults: Fault[] = [
        { kind: 'switchover', at: 6, node: 'n1' },
        { kind: 'dcs-partition', at: 24, node: 'n2', steps: 22 },
        { kind: 'switchover', at: 49, node: 'n2' },
      ];
      expect(failsafeOf(779320)).toBe(true);
      const { result } = await runSchedule(779320, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' });
      expect(result.failsafe).toBe(true);
      expect(result.violations).toEqual([]);
    });

    it('seed 782769 (liveness-primary): the same, with a switchover to the member that was cut from the DCS', async () => {
      const faults: Fault[] = [
        { kind: 'dcs-partition', at: 16, node: 'n3', steps: 19 },
        { kind: 'switchover', at: 18, node: 'n2' },
        { kind: 'switchover', at: 37, node: 'n3' },
      ];
      const { result } = await runSchedule(782769, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' });
      expect(result.failsafe).toBe(true);
      expect(result.violations).toEqual([]);
    });

    it('seed 783671 (leader-lease, timeline-monotonic): a restarted agent does not race on an acceptance it forgot', async () => {
      // n1 accepted n3's POST /failsafe (n3 cut from the DCS runs on failsafe), its agent crashed
      // and came back 1.5 s later without that memory, raced and promoted while n3 still
      // acknowledged writes. Now an agent does not race in its first ttl when the failsafe key
      // lists members.
      const faults: Fault[] = [
        { kind: 'net-partition', at: 19, node: 'n3', peer: 'n2', steps: 17 },
        { kind: 'dcs-partition', at: 34, node: 'n3', steps: 27 },
        { kind: 'net-partition', at: 51, node: 'n2', peer: 'n3', steps: 11 },
        { kind: 'agent-crash', at: 54, node: 'n1', steps: 3 },
      ];
      const { result } = await runSchedule(783671, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' });
      expect(result.failsafe).toBe(true);
      expect(result.violations).toEqual([]);
    });
  });

  it('finding 12 (seed 5004313, liveness-primary): a switchover to a member the failsafe key does not list, asked while the leader was cut from the DCS', async () => {
    // n3's member key expired during its DCS partition, so the leader n2 wrote the failsafe key
    // without it; n2 was then cut from the DCS (failsafe) and the operator asked for a switchover
    // to n3. The leader key expired; n3 (unlisted) never raced and n1 and n2 waited for it.
    const faults: Fault[] = [
      { kind: 'dcs-partition', at: 4, node: 'n3', steps: 27 },
      { kind: 'dcs-partition', at: 30, node: 'n2', steps: 29 },
      { kind: 'switchover', at: 36, node: 'n3' },
    ];
    const { result } = await runSchedule(5004313, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' });
    expect(result.failsafe).toBe(true);
    expect(result.violations).toEqual([]);
  });

  it('finding 13 (seed 5008648, liveness-primary): the former leader of a switchover whose candidate is behind the cluster timeline races', async () => {
    // n3 took over by switchover (timeline 2) but, its messages late, never published itself as
    // primary: n1 and n2 stayed on timeline 1. n3 was cut from the DCS and demoted; the operator
    // asked for a switchover to n2. The key expired: n2 and n1 were behind the cluster timeline
    // and n3 stepped aside as the switchover's former leader: no primary.
    const faults: Fault[] = [
      { kind: 'slow-loop', at: 12, node: 'n3', steps: 13, ms: 440 },
      { kind: 'switchover', at: 21, node: 'n3' },
      { kind: 'heal', at: 23 },
      { kind: 'net-delay', at: 24, node: 'n3', steps: 8, ms: 663 },
      { kind: 'dcs-partition', at: 29, node: 'n3', steps: 26 },
      { kind: 'switchover', at: 42, node: 'n2' },
    ];
    const { result } = await runSchedule(5008648, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' });
    expect(result.violations).toEqual([]);
  });

  it('finding 13, with --freeze (seed 2388, liveness-primary): the same when the sync key lets only the former leader take over', async () => {
    const faults: Fault[] = [
      { kind: 'slow-loop', at: 13, node: 'n2', steps: 23, ms: 953 },
      { kind: 'net-delay', at: 17, node: 'n3', steps: 16, ms: 1136 },
      { kind: 'pg-crash', at: 18, node: 'n2' },
      { kind: 'switchover', at: 24, node: 'n2' },
      { kind: 'freeze', at: 33, node: 'n3', steps: 10 },
    ];
    const { result } = await runSchedule(2388, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' });
    expect(result.violations).toEqual([]);
  });

  it('finding 14 (seed 31337445, liveness-primary): the sync key lets only its leader take over, a refused peer is ahead in WAL', async () => {
    // n3 took over by switchover (quorum mode, sync key {leader n3, no standby}) and was cut from
    // the DCS before n1 and n2 followed it; n1 (timeline 1) was ahead of it in LSN numbers. The
    // key refused n1 and n2, and n3 deferred to n1 ("wal position of n1 is ahead"): no primary.
    const faults: Fault[] = [
      { kind: 'net-partition', at: 2, node: 'n2', peer: 'n3', steps: 9 },
      { kind: 'net-partition', at: 19, node: 'n2', peer: 'n1', steps: 26 },
      { kind: 'net-delay', at: 26, node: 'n1', steps: 14, ms: 330 },
      { kind: 'switchover', at: 32, node: 'n3' },
      { kind: 'dcs-partition', at: 37, node: 'n3', steps: 23 },
    ];
    const { result } = await runSchedule(31337445, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' });
    expect(result.violations).toEqual([]);
  });

  it('finding 15, with --freeze (seed 257, single-writer): a cycle that stalled after its renewal does not start a primary on a lock that ran out', async () => {
    // n1 (leader) was frozen with a renewal's answer in flight and its postmaster crashed; thawed
    // 14.5 s later, the cycle went on with that answer ("renewed"), started PostgreSQL as primary
    // on a lock that had expired 5 s before (n3 led by then), unfenced: two writers.
    const faults: Fault[] = [
      { kind: 'freeze', at: 17, node: 'n1', steps: 7 },
      { kind: 'pg-crash', at: 18, node: 'n1' },
      { kind: 'net-delay', at: 21, node: 'n1', steps: 22, ms: 594 },
      { kind: 'freeze', at: 26, node: 'n1', steps: 29 },
    ];
    const { result, world } = await runSchedule(257, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    expect(world.journalJsonl()).toContain('ha.lock.stale');
  });

  it('finding 16, with --freeze (seed 5006442, leader-lease): a primary restarted after a crash is fenced while its agent is frozen', async () => {
    // n3 (leader, its loop 840 ms late) restarted its crashed postmaster as primary and froze
    // before arming the fence on the new PID (the fence was armed on the old one, disarmed when it
    // died): the primary wrote past its lease. Armed on the data directory, the fence stops it.
    const faults: Fault[] = [
      { kind: 'slow-loop', at: 11, node: 'n3', steps: 27, ms: 840 },
      { kind: 'pg-crash', at: 34, node: 'n3' },
      { kind: 'freeze', at: 40, node: 'n3', steps: 26 },
    ];
    const { result, world } = await runSchedule(5006442, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    // Still armed (on the data directory) across the crash, it stops the new postmaster.
    expect(world.journalJsonl()).toMatch(/"node":"n3"[^\n]*the fence stopped PostgreSQL \(deadline, 0 ms late\): SIGQUIT/);
  });

  it('finding 16, with --freeze (seeds 5008556, 5009078, leader-lease): their drawn schedules break nothing', async () => {
    for (const seed of [5008556, 5009078]) {
      const { result } = await runSchedule(seed, { nodes: 3, steps: 60, freeze: true, failsafe: 'draw' });
      expect(result.violations).toEqual([]);
    }
  });

  it('finding 16, with --freeze (seed 5004363, timeline-monotonic): a start the fence stopped is not retried as primary on a lost lock', async () => {
    // n1's start as primary, issued before a freeze, launched its postmaster; the fence stopped it
    // at its deadline; thawed, the start's retry loop launched it again as primary on timeline 1
    // although the lock was gone and n2 wrote on timeline 2.
    const faults: Fault[] = [
      { kind: 'slow-loop', at: 27, node: 'n1', steps: 28, ms: 974 },
      { kind: 'pg-crash', at: 30, node: 'n1' },
      { kind: 'freeze', at: 41, node: 'n1', steps: 18 },
    ];
    const { result, world } = await runSchedule(5004363, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    // The start as primary on the expired lock is refused: at the launch (finding 16's check) or,
    // since the stopped member's cycle reads where its WAL ends (issue 24: one more await, so the
    // freeze lands elsewhere), already by the cycle's own check of the lock (finding 15).
    expect(world.journalJsonl()).toMatch(
      /not starting PostgreSQL as primary|not carrying out 'starting primary after failure': the leader lock may have expired/,
    );
  });

  it('finding 17, with --freeze (seed 5003160, diverged-streaming): a promotion whose agent froze before writing its marker is still told apart', async () => {
    // n1 promoted (switchover) to timeline 2 and froze before writing ha.promotion.json; its fence
    // stopped it; n3 promoted to its own timeline 2 at the same switch point; thawed, n1 followed
    // n3: identical history files, no marker to tell the two "timeline 2"s apart.
    const faults: Fault[] = [
      { kind: 'switchover', at: 3, node: 'n1' },
      { kind: 'slow-loop', at: 3, node: 'n2', steps: 14, ms: 861 },
      { kind: 'freeze', at: 14, node: 'n1', steps: 24 },
    ];
    const { result, world } = await runSchedule(5003160, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    expect(world.journalJsonl()).toMatch(/diverged from leader n3: timeline 2 here was made by n1's promotion/);
  });

  it('finding 18 (seed 881194168, liveness-primary): the former leader of a switchover races when the member it would step aside for is behind it in WAL', async () => {
    // n3 promoted (switchover) to timeline 2, froze and demoted; a switchover to n1 followed, but
    // the failsafe key does not list n1; n2 deferred to n3 (ahead in WAL) while n3 stepped aside
    // for n2 as "a member that can win": no primary after the heal.
    const faults: Fault[] = [
      { kind: 'dcs-partition', at: 3, node: 'n1', steps: 30 },
      { kind: 'switchover', at: 30, node: 'n3' },
      { kind: 'freeze', at: 31, node: 'n3', steps: 28 },
      { kind: 'pg-crash', at: 33, node: 'n3' },
      { kind: 'switchover', at: 44, node: 'n1' },
      { kind: 'agent-crash', at: 46, node: 'n2', steps: 25 },
      { kind: 'heal', at: 53 },
    ];
    const { result } = await runSchedule(881194168, { nodes: 3, steps: 60, freeze: true, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
  });

  it('finding 19 (seed 182742808, promotion-lag): a switchover the leader never carried out does not let its candidate promote far behind', async () => {
    // A switchover to n1 was asked while n2, the leader, was cut from the DCS; n2 kept leading in
    // failsafe mode while n1's postmaster crashed; when n2 came back its lock had run out, and n1,
    // still named in the failover key, raced without comparing WAL: 1.2 MB behind n2.
    const faults: Fault[] = [
      { kind: 'dcs-partition', at: 14, node: 'n2', steps: 15 },
      { kind: 'switchover', at: 16, node: 'n1' },
      { kind: 'net-partition', at: 17, node: 'n2', peer: 'n1', steps: 20 },
      { kind: 'dcs-partition', at: 31, node: 'n2', steps: 28 },
      { kind: 'pg-crash', at: 33, node: 'n1' },
    ];
    const { result, world } = await runSchedule(182742808, { nodes: 3, steps: 60, freeze: false, faults, failsafe: 'draw' }, true);
    expect(result.violations).toEqual([]);
    // n2, holding the most WAL, takes its lock again and clears the switchover; n1 never promotes.
    const journal = world.journalJsonl();
    expect(journal).toMatch(/"node":"n2","machine":"switchover","kind":"event","event":\{"type":"switchover.failed"/);
    expect(journal).not.toMatch(/"node":"n1"[^\n]*"cmd.promote"/);
  });

  it('slow event loops and message delays are drawn by default, from a second stream; not when --kinds leaves them out', () => {
    const opts = { nodes: 3, steps: 60, stepMs: 500, freeze: false };
    for (let seed = 1; seed <= 50; seed++)
      expect(
        drawFaults(seed, { ...opts, kinds: ['pg-crash', 'switchover'] }).some((f) => f.kind === 'slow-loop' || f.kind === 'net-delay'),
      ).toBe(false);
    const byDefault = Array.from({ length: 50 }, (_, i) => drawFaults(i + 1, opts)).flat();
    expect(byDefault.some((f) => f.kind === 'slow-loop')).toBe(true);
    expect(byDefault.some((f) => f.kind === 'net-delay')).toBe(true);
    expect(byDefault.some((f) => f.kind === 'freeze')).toBe(false);
    // The earlier kinds' draw does not move when the later kinds are added.
    expect(drawFaults(9, { ...opts, kinds: ['pg-crash'] })).toEqual(
      drawFaults(9, { ...opts, kinds: ['pg-crash', 'slow-loop', 'net-delay'] }).filter((f) => f.kind === 'pg-crash'),
    );
    expect(drawFaults(9, { ...opts, kinds: FIRST_STREAM_KINDS })).toEqual(
      drawFaults(9, opts).filter((f) => f.kind !== 'slow-loop' && f.kind !== 'net-delay'),
    );
  });

  it('finding 11: a postmaster check answered under a slow loop, delivered after a restart, no longer stops the leader for good', async () => {
    // n3 (leader) ran 1.1 s late; its fence stopped PostgreSQL; the agent started it again; a
    // crash-watcher answer from before the start ("no postmaster") arrived after it and the
    // machine went to `crashed` over a running postmaster: every start then failed ("another
    // server might be running") for 60 s and n2's crash was never repaired. Fixed in the model
    // (a slow view runs completions in order, SimClock test above) and in the agent (LocalWatch
    // reports a death only for the run it checked, tests/node/local/local-watch.test.ts).
    const faults: Fault[] = [
      { kind: 'slow-loop', at: 5, node: 'n3', steps: 22, ms: 1110 },
      { kind: 'pg-crash', at: 30, node: 'n2' },
    ];
    const { result } = await runSchedule(785165, { nodes: 3, steps: 60, freeze: false, faults });
    expect(result.violations).toEqual([]);
  });

  it('planted bug: a PostgreSQL that accepts writes after its demotion', async () => {
    const found = await partitionEachMember({ pgBugs: { writableAfterStop: true } });
    expect(found.map((f) => f.invariant)).toContain('single-writer');
  });

  it('a failing run prints the seed, a shrunk schedule and the journal, and exits 1', async () => {
    const q = quiet();
    const journalPath = join(dir, 'planted.jsonl');
    const summary = await simulate({
      schedules: 3,
      seed: 1,
      nodes: 3,
      steps: 60,
      freeze: false,
      faults: [
        { kind: 'pg-crash', at: 1, node: 'n2' },
        { kind: 'dcs-partition', at: 2, node: 'n1', steps: 40 },
        { kind: 'dcs-partition', at: 2, node: 'n2', steps: 40 },
        { kind: 'dcs-partition', at: 2, node: 'n3', steps: 40 },
        { kind: 'net-partition', at: 3, node: 'n1', peer: 'n2', steps: 5 },
      ],
      plant: { pgBugs: { writableAfterStop: true } },
      journalPath,
      ...q,
    });
    expect(summary.exitCode).toBe(1);
    expect(summary.firstFailure?.seed).toBe(1);
    expect(summary.firstFailure!.shrunk.length).toBeLessThan(5);
    expect(q.lines).toContain('first failing seed: 1');
    expect(q.lines.some((l) => l.startsWith('shrunk schedule'))).toBe(true);
    const journal = readFileSync(journalPath, 'utf8').trim().split('\n');
    expect(journal.length).toBeGreaterThan(10);
    expect(new Set(journal.map((l) => (JSON.parse(l) as { node: string }).node))).toEqual(new Set(['n1', 'n2', 'n3']));
    expect(q.lines.at(-1)).toMatch(/^3 schedules, [1-9]\d* violations$/);
  });
});
