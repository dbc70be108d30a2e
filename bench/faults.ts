/**
 * Fault benchmark (issue 10; docs/ha.md "Fault benchmark"). Not a timed test: for each fault, a
 * fresh real 3-node cluster (etcd, PostgreSQL 15, one agent per node; ttl 10, loop_wait 2,
 * retry_timeout 3, the fault tests' settings) with the write probe of the fault tests running
 * (one INSERT per member every 100 ms). Per fault it measures, from the injection:
 *   - writes stopped: the first probe round the old leader did not acknowledge;
 *   - one primary again: the first round after that with exactly one member acknowledging;
 *   - the write gap between the two;
 *   - overlap: probe rounds in which two members acknowledged (must be 0) and their summed
 *     overlapping time.
 * Faults: etcd frozen 2 × ttl without failsafe, etcd frozen 2 × ttl with failsafe, the leader's
 * agent SIGKILL (PostgreSQL left running), the leader's agent SIGSTOP 2 × ttl, node loss (kill -9 of
 * agent, postmaster and children), the leader isolated in a network namespace for 2 × ttl.
 * Prints a markdown table with the reference's figures (../shared/docs/reference) and the load.
 *
 *   node --import tsx bench/faults.ts [--only etcd-freeze,partition,...]
 */
import { cpus, loadavg } from 'node:os';
import { sleep, waitFor } from '../tests/support/processes.ts';
import { TestCluster, type ClusterOptions } from '../tests/e2e/support/cluster.ts';
import { createNetLab, createPartitionCluster, startWithNode1Leading, type NetLab } from '../tests/e2e/support/netlab.ts';
import { loseMember } from '../tests/e2e/support/sync.ts';
import { createSafetyTables, startWriteProbe, type WriteProbe } from '../tests/e2e/support/writer.ts';
import { DEMOTION_SLACK_MS, firstMiss, RECOVERY_BOUND_MS, STOP_ACK_BOUND_MS, T } from '../tests/e2e/faults/timing.ts';

/** How long after the injection returned to wait for the old leader's first missed write before concluding it never stopped. */
const STOP_WAIT_MS = 30_000;
/** The fence's margin in use: min(safety_margin, retry_timeout / 2) (docs/ha.md "Fencing"). */
const MARGIN = Math.min(5, T.retry_timeout / 2);
/** A new writable primary after an abrupt fault: ttl + loop_wait + 2 × retry_timeout + 5 s promotion slack (the fault tests' bound). */
const FAILOVER_BOUND_MS = (T.ttl + T.loop_wait + 2 * T.retry_timeout) * 1000 + 5000;
const sec = (ms: number) => `${+(ms / 1000).toFixed(1)} s`;

interface Fault {
  id: string;
  name: string;
  /** Reference figure or bound, with its source. */
  reference: string;
  /** Our bound, as a formula of ttl (T), loop_wait (L), retry_timeout (R) and its value (tests/e2e/faults/timing.ts and the fault tests). */
  bound: string;
  opts: ClusterOptions;
  /** Injects the fault (and heals it when it is a timed one); resolves when done injecting. */
  inject(c: TestCluster, leader: string, at: (ms: number) => void): Promise<void>;
  partition?: boolean;
}

const base: ClusterOptions = { nodes: 3, ttl: T.ttl, loopWait: T.loop_wait, retryTimeout: T.retry_timeout };
const fenced: ClusterOptions = {
  ...base,
  dcsExtra: ['database: { remove_data_directory_on_diverged_timelines: true }'],
  watchdog: { mode: 'automatic', safety_margin: 5 },
};

const FAULTS: Fault[] = [
  {
    id: 'etcd-freeze',
    name: 'etcd frozen (SIGSTOP) 2 × ttl, failsafe off',
    reference: 'Patroni: demotes ≤ L + 2R = 8 s, no promotion, normal ≤ L + R after etcd returns (reliability.md §3.3 #17, #19)',
    bound: `stop ≤ T − R = ${sec(STOP_ACK_BOUND_MS - DEMOTION_SLACK_MS)} (+${sec(DEMOTION_SLACK_MS)} slack); one primary ≤ thaw (${sec(2 * T.ttl * 1000)}) + T + 2L + 2R (+5 s) = ${sec(2 * T.ttl * 1000 + RECOVERY_BOUND_MS)}`,
    opts: { ...base, watchdog: { mode: 'off' } },
    async inject(c, _l, at) {
      at(Date.now());
      c.etcd.freeze();
      await sleep(2 * T.ttl * 1000);
      c.etcd.thaw();
    },
  },
  {
    id: 'etcd-freeze-failsafe',
    name: 'etcd frozen (SIGSTOP) 2 × ttl, failsafe on',
    reference: 'Patroni dcs_failsafe_mode: still primary, `failsafe_mode_is_active` ≤ 12 s: no write gap (reliability.md §1.1)',
    bound: 'no stop while every failsafe member accepts (failsafe.test.ts)',
    opts: { ...base, dcsExtra: ['failsafe_mode: true'], watchdog: { mode: 'off' } },
    async inject(c, _l, at) {
      await waitFor(async () => Object.keys(JSON.parse((await c.etcdGet('failsafe')) ?? '{}')).length === 3, 30_000, 'the failsafe key');
      at(Date.now());
      c.etcd.freeze();
      await sleep(2 * T.ttl * 1000);
      c.etcd.thaw();
    },
  },
  {
    id: 'agent-kill',
    name: "leader's agent SIGKILL, PostgreSQL left running",
    reference:
      'orphan stopped by the watchdog before T − M, new primary ≤ T + L + P (reliability.md §3.3 #2); Patroni needs a kernel watchdog for this (§1.1, §5.1)',
    bound: `stop ≤ ${sec(1500)} (fence pipe closed); one primary ≤ T + L + 2R (+5 s) = ${sec(FAILOVER_BOUND_MS)}`,
    opts: fenced,
    async inject(c, leader, at) {
      at(Date.now());
      await c.killAgent(leader);
    },
  },
  {
    id: 'agent-freeze',
    name: "leader's agent SIGSTOP 2 × ttl",
    reference:
      'Patroni frozen_patroni: watchdog triggered ≤ 20 s at ttl 21 (needs a kernel watchdog); before this work: promoted after 9.1 s with 10.8 s of two primaries (issue 10)',
    bound: `stop ≤ last renewal + T − min(M, R/2) = ${sec((T.ttl - MARGIN) * 1000)} (+${sec(1500)}); one primary ≤ T + L + 2R (+5 s) = ${sec(FAILOVER_BOUND_MS)}`,
    opts: fenced,
    async inject(c, leader, at) {
      const pid = c.agentPid(leader)!;
      at(Date.now());
      process.kill(pid, 'SIGSTOP');
      try {
        await sleep(2 * T.ttl * 1000);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    },
  },
  {
    id: 'node-loss',
    name: 'node loss (kill -9 of agent, postmaster, children)',
    reference:
      'new primary ≤ T + L + P, P ≈ 1–3 s (CNPG failover_test, Stolon TestFailover, pg_auto_failover; reliability.md §3.2, §3.3 #3)',
    bound: `stop: at once; one primary ≤ T + L + 2R (+5 s) = ${sec(FAILOVER_BOUND_MS)}`,
    opts: base,
    async inject(c, leader, at) {
      at(Date.now());
      await loseMember(c, leader);
    },
  },
  {
    id: 'partition',
    name: 'leader isolated (netns, its veth down 2 × ttl)',
    reference: 'pg_auto_failover / CNPG / Stolon: old primary stops by T − M, new primary ≤ T + L + P (reliability.md §3.3 #16)',
    bound: `stop ≤ T − R = ${sec(STOP_ACK_BOUND_MS - DEMOTION_SLACK_MS)} (+${sec(DEMOTION_SLACK_MS)} slack); one primary ≤ T + L + 2R (+5 s) = ${sec(FAILOVER_BOUND_MS)}`,
    opts: base,
    partition: true,
    async inject() {
      /* done in run(): the lab */
    },
  },
];

interface Row {
  fault: Fault;
  leader: string;
  stoppedMs?: number;
  backMs?: number;
  gapMs?: number;
  newPrimary?: string;
  overlapRounds: number;
  overlapMs: number;
  error?: string;
}

async function measure(fault: Fault): Promise<Row> {
  let lab: NetLab | undefined;
  let c: TestCluster | undefined;
  let probe: WriteProbe | undefined;
  let leader = '?';
  try {
    if (fault.partition) {
      lab = await createNetLab();
      c = await createPartitionCluster(lab);
      await startWithNode1Leading(c);
      leader = 'node1';
    } else {
      c = await TestCluster.create(fault.opts);
      c.startAll();
      leader = await c.settled(120_000);
    }
    await createSafetyTables(c, leader);
    probe = startWriteProbe(c, { viaSocket: !!fault.partition });
    await sleep(3000);
    let injectedAt = 0;
    if (fault.partition) {
      injectedAt = Date.now();
      await lab!.isolate();
      await sleep(2 * T.ttl * 1000);
      await lab!.heal();
    } else {
      await fault.inject(c, leader, (ms) => (injectedAt = ms));
    }
    const p = probe;
    const single = (from: number) => p.transitions().find((t) => t.at >= from && t.members.length === 1);
    // Writes stopped on the old leader, then one primary again (or never stopped: failsafe). A
    // fault whose injection returns at once (SIGKILL, node loss) is noticed by the probe only in
    // a later round: wait for the miss (up to STOP_WAIT_MS) rather than reading the transitions as
    // they are when the injection returns (which reported "never stopped" for the agent SIGKILL).
    const stoppedAt = await waitFor(() => firstMiss(p, leader, injectedAt), STOP_WAIT_MS, 'the old leader to stop acknowledging').catch(
      () => undefined,
    );
    if (stoppedAt !== undefined) {
      const back = await waitFor(() => single(stoppedAt), 90_000, 'one primary again').catch(() => undefined);
      await sleep(2000);
      return rowOf(fault, leader, p, injectedAt, stoppedAt, back);
    }
    // never stopped (failsafe): no gap, the same primary
    await sleep(2000);
    return { ...rowOf(fault, leader, p, injectedAt, undefined, undefined), backMs: 0, gapMs: 0, newPrimary: leader };
  } catch (e) {
    return { fault, leader, overlapRounds: probe?.twoPrimaries().length ?? 0, overlapMs: 0, error: String(e).split('\n')[0] };
  } finally {
    await probe?.stop();
    await c?.destroy().catch(() => undefined);
    await lab?.destroy();
  }
}

function rowOf(
  fault: Fault,
  leader: string,
  p: WriteProbe,
  injectedAt: number,
  stoppedAt: number | undefined,
  back: { at: number; members: string[] } | undefined,
): Row {
  const doubles = p.twoPrimaries(injectedAt - 5000);
  const overlapMs = doubles.reduce((sum, d) => {
    const iv = Object.values(d.intervals);
    return sum + Math.max(0, Math.min(...iv.map((x) => x[1])) - Math.max(...iv.map((x) => x[0])));
  }, 0);
  return {
    fault,
    leader,
    ...(stoppedAt !== undefined ? { stoppedMs: stoppedAt - injectedAt } : {}),
    ...(back ? { backMs: back.at - injectedAt, newPrimary: back.members[0]! } : {}),
    ...(back && stoppedAt !== undefined ? { gapMs: back.at - stoppedAt } : {}),
    overlapRounds: doubles.length,
    overlapMs,
  };
}

const s = (ms: number | undefined) => (ms === undefined ? '—' : (ms / 1000).toFixed(1));

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const i = args.indexOf('--only');
  const only = i >= 0 ? new Set(args[i + 1]!.split(',')) : undefined;
  const loadBefore = loadavg();
  const started = new Date();
  const rows: Row[] = [];
  for (const f of FAULTS) {
    if (only && !only.has(f.id)) continue;
    process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${f.id} …\n`);
    const r = await measure(f);
    process.stderr.write(`  ${JSON.stringify({ ...r, fault: f.id })}\n`);
    rows.push(r);
  }
  const loadAfter = loadavg();
  console.log(
    `Fault benchmark, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} cores, load average ${loadBefore.map((x) => x.toFixed(2)).join(' ')} before / ${loadAfter.map((x) => x.toFixed(2)).join(' ')} after; ttl ${T.ttl}, loop_wait ${T.loop_wait}, retry_timeout ${T.retry_timeout}; write probe every 100 ms.\n`,
  );
  console.log(
    '| Fault | Writes stopped after (s) | One primary again after (s) | Write gap (s) | New primary | Overlap (rounds / ms, must be 0) | Bound (T = ttl, L = loop_wait, R = retry_timeout) | Reference |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    const np = r.newPrimary === undefined ? '—' : r.newPrimary === r.leader ? 'same' : 'other';
    const err = r.error ? ` (error: ${r.error})` : '';
    console.log(
      `| ${r.fault.name}${err} | ${r.stoppedMs === undefined ? 'never' : s(r.stoppedMs)} | ${s(r.backMs)} | ${s(r.gapMs)} | ${np} | ${r.overlapRounds} / ${r.overlapMs} | ${r.fault.bound} | ${r.fault.reference} |`,
    );
  }
}

await main();
