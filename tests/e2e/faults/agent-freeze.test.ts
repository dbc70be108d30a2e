/**
 * Fencing of a dead or frozen leader agent (issue 10; docs/ha.md "Fencing"), on a real 3-node
 * cluster (ttl 10, loop_wait 2, retry_timeout 3, watchdog automatic with safety_margin 5) with the
 * write probe running (one INSERT per member every 100 ms):
 *
 * (a) the leader's agent SIGSTOPped for 2 × ttl, then SIGCONTed: its fence fires at last renewal
 *     + ttl − safety_margin (the postmaster is gone before the leader key can expire), a replica
 *     is promoted within ttl + loop_wait + 2 × retry_timeout (+ slack for the promotion), no probe
 *     round sees two members acknowledge writes, and the old node comes back as a streaming replica
 *     by itself under the default configuration (issue 24: the fence's immediate stop leaves no
 *     shutdown checkpoint; where its WAL ends is read from the WAL: at or before the switch point
 *     it starts as a replica, past it pg_rewind, the default, rewinds it), holding a row written
 *     on the new leader, within REJOIN_BOUND_MS of the SIGCONT;
 * (b) the leader's agent SIGKILLed with PostgreSQL left running: the fence sees its pipe close and
 *     stops the postmaster within about a second; a replica is promoted, no overlap; the agent,
 *     restarted after the failover, rejoins as a replica holding a row written on the new leader.
 *
 * The cluster runs the default configuration but for the fence's settings: nothing under
 * `database` about rewind or removal.
 *
 * Every process started here is stopped by PID (TestCluster.destroy; frozen ones are SIGCONTed first).
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, sleep, waitFor } from '../../support/processes.ts';
import { TestCluster, type KeyWatch } from '../support/cluster.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from '../support/writer.ts';

const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;
const SAFETY_MARGIN = 5;
/** The margin in use: at most retry_timeout / 2, so the agent's own deadline comes first (docs/ha.md "Fencing"). */
const MARGIN = Math.min(SAFETY_MARGIN, RETRY_TIMEOUT / 2);
/** The fence fires at last renewal + ttl − margin; the last renewal was before the fault. Slack: the fence's own timer and SIGQUIT. */
const FENCE_BOUND_MS = (TTL - MARGIN) * 1000 + 1500;
/** A new writable primary after the fault: lease expiry (ttl) + a cycle (loop_wait) + two DCS calls (2 × retry_timeout) + promotion slack. */
const FAILOVER_BOUND_MS = (TTL + LOOP_WAIT + 2 * RETRY_TIMEOUT) * 1000 + 5_000;
/**
 * Back as a streaming replica after the agent runs again (thawed or restarted): its start or its
 * thawed cycle and the next (2 × loop_wait), the DCS calls of both (2 × retry_timeout), the
 * not-streaming grace (max(2 × loop_wait, retry_timeout)), plus 20 s for the tools (pg_waldump,
 * crash recovery and pg_rewind, or a start) on a small database and a loaded 2-core machine.
 */
const REJOIN_BOUND_MS = (2 * LOOP_WAIT + 2 * RETRY_TIMEOUT + Math.max(2 * LOOP_WAIT, RETRY_TIMEOUT)) * 1000 + 20_000;
/** SIGKILL of the agent: the fence's pipe closes at once; SIGQUIT takes milliseconds. */
const PIPE_FENCE_BOUND_MS = 1500;
const LOG_RE = /leader|lock|promot|demot|fence|watchdog|diverg|clone|secondary|stop|start/i;

let c: TestCluster;
let probe: WriteProbe | undefined;
const frozen = new Set<number>();
const figures: string[] = [];

beforeAll(async () => {
  c = await TestCluster.create({
    nodes: 3,
    ttl: TTL,
    loopWait: LOOP_WAIT,
    retryTimeout: RETRY_TIMEOUT,
    watchdog: { mode: 'automatic', safety_margin: SAFETY_MARGIN },
  });
  c.startAll();
  try {
    const leader = await c.settled(120_000, LOG_RE);
    await createSafetyTables(c, leader);
    probe = startWriteProbe(c);
  } catch (e) {
    throw new Error(`${String(e)}\n${c.logs()}`);
  }
});

afterAll(async () => {
  for (const pid of frozen) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      /* gone */
    }
  }
  await probe?.stop();
  if (figures.length) console.log(`agent-freeze figures:\n${figures.join('\n')}`);
  await c?.destroy();
});

/** A metric's value on a member's /metrics (undefined when absent or unreachable). */
async function metric(name: string, metricName: string): Promise<number | undefined> {
  const r = await c.get(name, '/metrics');
  const line = r.body.split('\n').find((l) => l.startsWith(`${metricName}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : undefined;
}

/**
 * True while `pid` runs and is not a zombie: a postmaster re-parented to this machine's PID 1 may
 * stay a zombie for a while after it exited (kill(pid, 0) still succeeds), acknowledging nothing.
 */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return isAlive(pid) && !existsSync('/proc/self/stat');
  }
}

/** Polls every 10 ms until `pid` is gone (or a zombie); resolves with the ms since `fromMs`. */
async function goneAfter(pid: number, fromMs: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (running(pid)) {
    if (Date.now() > deadline) throw new Error(`postmaster ${pid} still alive ${timeoutMs} ms after the fault`);
    await sleep(10);
  }
  return Date.now() - fromMs;
}

/** When the probe last saw `member` acknowledge a write after `fromMs` (transition out of the writable set). */
function writesStoppedAt(member: string, fromMs: number): number | undefined {
  const t = probe!.transitions();
  const i = t.findIndex((x) => x.at >= fromMs && !x.members.includes(member));
  return i >= 0 ? t[i]!.at : undefined;
}

/** The first deletion of the leader key seen by `w` after `fromMs`. */
function keyGoneAt(w: KeyWatch, fromMs: number): number | undefined {
  return w.events.find((e) => e.at >= fromMs && e.value === undefined)?.at;
}

async function assertArmed(leader: string): Promise<void> {
  await waitFor(async () => (await metric(leader, 'ha_watchdog_armed')) === 1, 20_000, `ha_watchdog_armed 1 on ${leader}`);
  for (const n of c.nodes)
    if (n.name !== leader) expect(await metric(n.name, 'ha_watchdog_armed'), `${n.name} is no leader: no fence`).toBe(0);
}

/**
 * Waits until `old` streams from the leader and holds a row written on the leader after the fault
 * (id `marker` in `ha_writer`): rejoined, not just running. Resolves with how it got there.
 */
async function rejoinedAsReplica(old: string, since: number, marker: number): Promise<string> {
  const leader = await c.waitForLeader(30_000, old);
  await waitFor(
    async () => {
      await c.psql(leader, `insert into ha_writer (id, member) values (${marker}, '${leader}') on conflict do nothing`, 2000);
      return true;
    },
    20_000,
    `a row written on ${leader}`,
  );
  await waitFor(
    async () => {
      if ((await c.get(old, '/replica')).status !== 200 || (await c.get(old, '/ha')).json()?.replication_state !== 'streaming')
        return false;
      return (await c.psql(old, `select count(*) from ha_writer where id = ${marker}`, 2000).catch(() => '')).trim() === '1';
    },
    REJOIN_BOUND_MS,
    `${old} back as a streaming replica of ${leader} holding row ${marker}`,
  ).catch((e) => {
    throw new Error(
      `${String(e)}\n${c.logsMatching(LOG_RE, since).slice(-60).join('\n')}\n==== ${old} output\n${c.node(old).output.slice(-12_000)}`,
    );
  });
  const lines = c.logsMatching(/./, since).filter((l) => l.includes(` ${old} `));
  return lines.some((l) => /pg_rewind from \S+ done/.test(l))
    ? 'rewound'
    : lines.some((l) => /bootstrap from|reinitializ/.test(l))
      ? 're-cloned'
      : 'started as a replica (no rewind needed)';
}

describe('fencing a frozen or dead leader agent', () => {
  it(`(a) SIGSTOP of the leader's agent for 2 × ttl: fenced within ttl − min(safety_margin, retry_timeout / 2), a new primary within ${FAILOVER_BOUND_MS / 1000} s, no overlap, the old node back as a replica`, async () => {
    const old = await c.settled(120_000, LOG_RE);
    await assertArmed(old);
    const agent = c.agentPid(old)!;
    const pm = c.postmasterPid(old)!;
    expect(agent).toBeGreaterThan(0);
    expect(pm).toBeGreaterThan(0);
    const watch = await c.watchKey('leader');
    try {
      const t0 = Date.now();
      frozen.add(agent);
      process.kill(agent, 'SIGSTOP');
      const fenceMs = await goneAfter(pm, t0, FENCE_BOUND_MS + 5000);
      const next = await c.waitForLeader(FAILOVER_BOUND_MS, old).catch((e) => {
        throw new Error(`no new leader within ${FAILOVER_BOUND_MS} ms: ${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}`);
      });
      await waitFor(async () => (await c.primaries()).includes(next), FAILOVER_BOUND_MS, `${next} writable`);
      const failoverMs = Date.now() - t0;
      const gone = keyGoneAt(watch, t0);
      const stopped = writesStoppedAt(old, t0);
      // Hold the freeze for 2 × ttl in all.
      await sleep(Math.max(0, 2 * TTL * 1000 - (Date.now() - t0)));
      process.kill(agent, 'SIGCONT');
      frozen.delete(agent);
      const tCont = Date.now();
      figures.push(
        `(a) SIGSTOP: postmaster gone ${fenceMs} ms after the freeze (bound ${FENCE_BOUND_MS}); old primary's last ack before ${stopped ? stopped - t0 : '?'} ms; ` +
          `leader key gone after ${gone ? gone - t0 : '?'} ms; new primary ${next} writable after ${failoverMs} ms (bound ${FAILOVER_BOUND_MS})`,
      );
      expect(fenceMs, 'the fence fires by last renewal + ttl − safety_margin').toBeLessThanOrEqual(FENCE_BOUND_MS);
      if (gone !== undefined) expect(gone - t0, 'the postmaster was gone before the leader key expired').toBeGreaterThan(fenceMs);
      expect(failoverMs).toBeLessThanOrEqual(FAILOVER_BOUND_MS);
      const how = await rejoinedAsReplica(old, tCont, 900_001);
      figures.push(
        `(a) ${old} streaming from ${await c.leader()} ${Date.now() - tCont} ms after SIGCONT (bound ${REJOIN_BOUND_MS}): ${how}`,
      );
      const overlaps = probe!.twoPrimaries(t0 - 1000);
      expect(overlaps, `two members acknowledged writes:\n${formatTransitions(probe!.transitions(), t0)}`).toEqual([]);
      const ha = (await c.get(old, '/ha')).json();
      expect(ha?.role).toBe('replica');
    } finally {
      await watch.stop();
    }
  });

  it(`(b) SIGKILL of the leader's agent with PostgreSQL left running: postmaster gone within ${PIPE_FENCE_BOUND_MS} ms, no overlap, the restarted agent rejoins as a replica`, async () => {
    const old = await c.settled(120_000, LOG_RE).catch((e) => {
      throw new Error(`${String(e)}\n${c.logs()}`);
    });
    await assertArmed(old);
    const pm = c.postmasterPid(old)!;
    expect(pm).toBeGreaterThan(0);
    const t0 = Date.now();
    await c.killAgent(old);
    const fenceMs = await goneAfter(pm, t0, PIPE_FENCE_BOUND_MS + 5000);
    const next = await c.waitForLeader(FAILOVER_BOUND_MS, old).catch((e) => {
      throw new Error(`no new leader within ${FAILOVER_BOUND_MS} ms: ${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}`);
    });
    await waitFor(async () => (await c.primaries()).includes(next), FAILOVER_BOUND_MS, `${next} writable`);
    const failoverMs = Date.now() - t0;
    figures.push(
      `(b) SIGKILL: postmaster gone ${fenceMs} ms after the kill (bound ${PIPE_FENCE_BOUND_MS}); new primary ${next} writable after ${failoverMs} ms`,
    );
    expect(fenceMs).toBeLessThanOrEqual(PIPE_FENCE_BOUND_MS);
    expect(failoverMs).toBeLessThanOrEqual(FAILOVER_BOUND_MS);
    const tStart = Date.now();
    c.start(old);
    const how = await rejoinedAsReplica(old, tStart, 900_002);
    figures.push(
      `(b) restarted ${old} streaming from ${await c.leader()} ${Date.now() - tStart} ms after its start (bound ${REJOIN_BOUND_MS}): ${how}`,
    );
    // The restarted agent journaled what its fence did while it was gone.
    expect(c.logsMatching(/fence stopped PostgreSQL/, t0).some((l) => l.includes(old))).toBe(true);
    const overlaps = probe!.twoPrimaries(t0 - 1000);
    expect(overlaps, `two members acknowledged writes:\n${formatTransitions(probe!.transitions(), t0)}`).toEqual([]);
  });
});
