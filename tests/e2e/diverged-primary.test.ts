/**
 * A demoted primary holding un-replicated WAL is never left running as a diverged replica
 * (issue "Safety bugs found under faults"), on a real 3-node cluster (ttl 10, loop_wait 2,
 * retry_timeout 3) with the write probe running.
 *
 * Recipe (why not SIGSTOP the replicas' walreceivers: WAL the walsender already pushed into the
 * socket would still be read after SIGCONT, so the replicas could end up with the rows):
 * 1. SIGSTOP the leader's agent (it can neither renew nor demote) and its walsenders (nothing more
 *    reaches the replicas; the replicas' walreceivers stay connected and idle, well under
 *    wal_receiver_timeout).
 * 2. Insert rows directly into the old primary's PostgreSQL (psql): they exist only there.
 *    Checked: neither replica has them.
 * 3. The lease expires, a replica wins the race and promotes; the other re-points its
 *    walreceiver at the new leader. A row is written on the new leader.
 * 4. SIGCONT the walsenders (their peers are gone, they exit), then the old agent.
 *
 * Asserted:
 * - the old leader never answers 200 on GET /replica while its PostgreSQL holds the rows the new
 *   leader lacks (checked with psql on it each time /replica answers 200);
 * - within END_BOUND_MS of the resume it ends either re-cloned/rewound (running replica,
 *   streaming, holds the new leader's row and none of the lost ones) or stopped with GET /ha
 *   saying why (a field or message mentioning divergence);
 * - no two members acknowledge writes in one probe round later than the fencing window: the old
 *   primary is writable while its agent is frozen (issue 10 covers fencing a frozen agent); it
 *   must stop accepting writes within loop_wait + 2*retry_timeout of the resume.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from './support/writer.ts';

const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;
/** After the freeze: a new leader (lease expiry + a race). ttl + loop_wait + retry_timeout, plus the promotion. */
const FAILOVER_BOUND_MS = (TTL + LOOP_WAIT + RETRY_TIMEOUT) * 1000 + 10_000;
/** After the resume, the old primary stops acknowledging writes: loop_wait + 2*retry_timeout. */
const FENCE_BOUND_MS = (LOOP_WAIT + 2 * RETRY_TIMEOUT) * 1000;
/**
 * After the resume, the old leader reaches its end state: demotion (loop_wait + 2*retry_timeout)
 * + a start or re-clone of a small database (30 s allowance) + ttl for it to be seen.
 */
const END_BOUND_MS = (LOOP_WAIT + 2 * RETRY_TIMEOUT + TTL) * 1000 + 30_000;
/** Rows written on the frozen old primary only. */
const LOST_IDS = { from: 1, to: 50 };
/** The row written on the new leader. */
const NEW_ID = 1000;
const LOG_RE = /leader|lock|promot|demot|switch|follow|timeline|reinit|secondary|diverg|clone|rewind|stop|start/i;

let c: TestCluster;
let probe: WriteProbe | undefined;
/** Processes this test SIGSTOPped: always SIGCONTed in afterAll, so destroy() can stop them. */
const frozen = new Set<number>();

beforeAll(async () => {
  // The fence (docs/ha.md "Fencing") would stop the frozen primary before the rows below are
  // written: this test is about what the agent does with a primary that did diverge, so it runs
  // without one (tests/e2e/faults/agent-freeze.test.ts covers the fence on a frozen agent).
  c = await TestCluster.create({ nodes: 3, ttl: TTL, loopWait: LOOP_WAIT, retryTimeout: RETRY_TIMEOUT, watchdog: { mode: 'off' } });
  c.startAll();
  try {
    const leader = await c.waitForLeader(60_000);
    await c.waitForStreaming(
      c.nodes.map((n) => n.name).filter((n) => n !== leader),
      60_000,
    );
    await createSafetyTables(c, leader);
    await c.psql(leader, 'create table ha_diverge (id int primary key, note text not null)');
    for (const n of c.nodes) await waitFor(async () => (await c.get(n.name, '/readiness')).status === 200, 30_000, `${n.name} ready`);
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
  await c?.destroy();
});

function freeze(pid: number): void {
  frozen.add(pid);
  process.kill(pid, 'SIGSTOP');
}

function thaw(pid: number): void {
  process.kill(pid, 'SIGCONT');
  frozen.delete(pid);
}

/** How many of the lost rows a member's PostgreSQL holds; undefined when it cannot be read. */
async function lostRowsOn(name: string): Promise<number | undefined> {
  try {
    return Number(
      (await c.psql(name, `select count(*) from ha_diverge where id between ${LOST_IDS.from} and ${LOST_IDS.to}`, 2000)).trim(),
    );
  } catch {
    return undefined;
  }
}

async function hasNewRow(name: string): Promise<boolean> {
  return (await c.psql(name, `select note from ha_diverge where id = ${NEW_ID}`, 2000).catch(() => '')).trim() !== '';
}

const hhmmss = (ms: number) => new Date(ms).toISOString().slice(11, 23);

describe('a primary frozen with un-replicated WAL, then demoted', () => {
  it(`is never a replica while diverged; ends re-cloned/rewound or stopped with a reason in GET /ha within ${END_BOUND_MS / 1000} s; writable alone after the fencing window`, async () => {
    const old = await c.waitForLeader(10_000);
    const replicas = c.nodes.map((n) => n.name).filter((n) => n !== old);
    const agent = c.agentPid(old);
    const senders = c.postgresChildren(old, 'walsender');
    expect(agent).toBeGreaterThan(0);
    expect(senders.length, `walsenders on ${old}`).toBe(replicas.length);

    // 1–2. Freeze the agent and the walsenders; write rows only the old primary will have.
    const tFreeze = Date.now();
    freeze(agent!);
    for (const pid of senders) freeze(pid);
    await c.psql(
      old,
      `insert into ha_diverge select g, 'only on the old primary' from generate_series(${LOST_IDS.from}, ${LOST_IDS.to}) g`,
    );
    await sleep(1000);
    for (const r of replicas) expect(await lostRowsOn(r), `the lost rows must not reach ${r} (recipe check)`).toBe(0);
    expect(await lostRowsOn(old)).toBe(LOST_IDS.to - LOST_IDS.from + 1);

    // 3. A new leader, writable; the other replica re-pointed away from the old primary.
    const next = await c.waitForLeader(FAILOVER_BOUND_MS, old).catch((e) => {
      throw new Error(
        `no new leader within ${FAILOVER_BOUND_MS} ms of the freeze: ${String(e)}\n${c.logsMatching(LOG_RE, tFreeze).join('\n')}`,
      );
    });
    const tElected = Date.now();
    await waitFor(
      async () => {
        await c.psql(next, `insert into ha_diverge values (${NEW_ID}, 'written on the new leader ${next}') on conflict do nothing`, 2000);
        return true;
      },
      20_000,
      `a write on ${next}`,
    );
    expect(await lostRowsOn(next), `the new leader ${next} lacks the lost rows`).toBe(0);
    const other = replicas.find((r) => r !== next)!;
    const otherUpstream = await waitFor(
      async () => {
        const port = (await c.psql(other, 'select sender_port from pg_stat_wal_receiver', 2000).catch(() => '')).trim();
        return port !== '' && port !== String(c.node(old).pgPort) ? port : undefined;
      },
      20_000,
      `${other} streaming away from ${old}`,
    ).catch(() => 'still the old primary (or none)');
    console.log(`frozen ${old} at ${hhmmss(tFreeze)}; ${next} elected at ${hhmmss(tElected)}; ${other} streams from port ${otherUpstream}`);

    // 4. Resume the walsenders (peers gone), then the old agent.
    for (const pid of senders) thaw(pid);
    await sleep(500);
    const tResume = Date.now();
    thaw(agent!);

    // Watch the old leader: /replica 200 must never coincide with the lost rows on it.
    const violations: { at: number; lost: number; ha: string }[] = [];
    let end: { kind: 'recloned' | 'stopped'; at: number; ha: string } | undefined;
    let stableSince = 0;
    const samples: string[] = [];
    let lastSample = '';
    while (Date.now() - tResume < END_BOUND_MS) {
      const [replica, ha] = await Promise.all([c.get(old, '/replica'), c.get(old, '/ha')]);
      const doc = ha.json();
      const lost = await lostRowsOn(old);
      const sample = `${doc?.state}/${doc?.role} replica=${replica.status} lost=${lost ?? '-'} streaming=${doc?.replication_state ?? '-'} tl=${doc?.timeline ?? '-'}`;
      if (sample !== lastSample) {
        samples.push(`${hhmmss(Date.now())} ${sample}`);
        lastSample = sample;
      }
      if (replica.status === 200 && lost !== undefined && lost > 0) violations.push({ at: Date.now(), lost, ha: ha.body });
      let now: typeof end;
      if (
        doc?.state === 'running' &&
        doc?.role === 'replica' &&
        lost === 0 &&
        doc?.replication_state === 'streaming' &&
        (await hasNewRow(old))
      ) {
        now = { kind: 'recloned', at: Date.now(), ha: ha.body };
      } else if (
        doc &&
        doc.state !== 'running' &&
        /diverg/i.test(ha.body) &&
        (await c.psql(old, 'select 1', 1000).then(
          () => false,
          () => true,
        ))
      ) {
        now = { kind: 'stopped', at: Date.now(), ha: ha.body };
      }
      if (now && end?.kind === now.kind) {
        if (Date.now() - stableSince >= 2 * LOOP_WAIT * 1000) break;
      } else {
        end = now;
        stableSince = Date.now();
      }
      await sleep(250);
    }
    const doubles = probe!.twoPrimaries(tElected);
    const late = doubles.filter((d) => d.at > tResume + FENCE_BOUND_MS);
    console.log(`${old} after the resume (${hhmmss(tResume)}):\n  ${samples.join('\n  ')}`);
    console.log(
      `end state: ${end ? `${end.kind} at +${end.at - tResume} ms: ${end.ha}` : `none; GET /ha of ${old} at the bound: ${(await c.get(old, '/ha')).body}`}`,
    );
    console.log(`writable members seen by the probe:\n${formatTransitions(probe!.transitions(), tFreeze - 1000)}`);
    console.log(
      `two members acknowledging writes after ${next} was elected: ${doubles.length} rounds` +
        (doubles.length
          ? ` from ${hhmmss(doubles[0]!.at)} to ${hhmmss(doubles[doubles.length - 1]!.at)} (fencing window ends ${hhmmss(tResume + FENCE_BOUND_MS)})`
          : ''),
    );
    console.log(`agent log lines since the freeze\n${c.logsMatching(LOG_RE, tFreeze).join('\n')}`);

    const violation =
      violations.length === 0
        ? ''
        : `${violations.length} polls from ${hhmmss(violations[0]!.at)} to ${hhmmss(violations[violations.length - 1]!.at)} answered /replica 200 ` +
          `while holding ${violations[0]!.lost} rows the new leader lacks; first GET /ha: ${violations[0]!.ha}`;
    expect.soft(violation, `${old} served as a replica with diverged data`).toBe('');
    expect
      .soft(end?.kind, `${old} ends re-cloned/rewound or stopped with a divergence reason in GET /ha within ${END_BOUND_MS} ms`)
      .toBeDefined();
    expect
      .soft(
        late.map((d) => `${hhmmss(d.at)} ${d.members.join('+')}`),
        'two primaries after the fencing window',
      )
      .toEqual([]);
    // The cluster itself goes on: the new leader is the only primary and the other replica holds its row.
    expect.soft(await c.primaries(), 'the only primary').toEqual([next]);
    expect.soft(await hasNewRow(other), `${other} holds the new leader's row`).toBe(true);
    expect.soft(await lostRowsOn(other), `${other} lacks the lost rows`).toBe(0);
  });
});
