/**
 * Garbage in the DCS (issue "Safety bugs found under faults"): values written with `etcdctl put`
 * straight into the cluster's keys, each restored afterwards, on one real 3-node cluster
 * (ttl 10, loop_wait 2, retry_timeout 3) with a recorded writer, a write probe on every member and
 * a watch on the leader key running over the whole file.
 *
 * (a) impossible timing {ttl 2, loop_wait 2, retry_timeout 3} merged into `config` for 30 s
 * (b) ttl -5 in `config`
 * (c) loop_wait 2147484 in `config` (past setTimeout's 2^31-1 ms)
 * (d) `failover` = {"leader": <leader>, "scheduled_at": "garbage"}
 * (e) `leader` naming a member that does not exist (expected behaviour still being decided)
 *
 * Every case starts from a settled cluster (one primary holding the key, every replica ready).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../support/processes.ts';
import { TestCluster, type KeyWatch } from './support/cluster.ts';
import {
  assertNoLoss,
  createSafetyTables,
  formatTransitions,
  startWriteProbe,
  startWriter,
  type RecordedWriter,
  type WriteProbe,
} from './support/writer.ts';

const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;
/** After a restore: every replica holds a row written on the leader and streams. ttl + 2*loop_wait. */
const FOLLOW_BOUND_MS = (TTL + 2 * LOOP_WAIT) * 1000;
/** (a): how long the impossible timing stays in the DCS. */
const IMPOSSIBLE_TIMING_MS = 30_000;
/** (b), (c): how long the garbage stays in the DCS: 3*loop_wait + retry_timeout + 1 s. */
const GARBAGE_MS = (3 * LOOP_WAIT + RETRY_TIMEOUT + 1) * 1000;
/**
 * (c): the most CPU an agent may use while loop_wait is absurd: 10% of a core. Measured on the
 * 2-core test machine: an idle agent 0.01–0.02 core; agents spinning on a setTimeout overflow
 * (2147484000 ms > 2^31-1 fires after 1 ms) 0.23–0.28 core each (three of them sharing the cores).
 */
const MAX_AGENT_CPU = 0.1;
/** (d): no leader change within 3*loop_wait after the garbage failover key. */
const FAILOVER_QUIET_MS = 3 * LOOP_WAIT * 1000;
/** PostgreSQL's wal_retrieve_retry_interval (default 5 s), seconds. */
const WAL_RETRIEVE_RETRY_INTERVAL = 5;
/**
 * (e): a primary again within ttl + loop_wait + retry_timeout + wal_retrieve_retry_interval
 * (docs/ha.md "A leader key naming an unknown member": members notice the key within loop_wait,
 * delete it after ttl and race at once; the winner's promotion can wait out its WAL receiver's
 * retry sleep, since its upstream, the old leader, stopped when its lock was taken).
 */
const GHOST_RECOVERY_MS = (TTL + LOOP_WAIT + RETRY_TIMEOUT + WAL_RETRIEVE_RETRY_INTERVAL) * 1000;
const GHOST = 'ghost-member';
const LOG_RE = /leader|lock|promot|demot|switch|follow|timeline|reinit|secondary|config|ttl|loop_wait|failover|invalid|ignor/i;

let c: TestCluster;
let writer: RecordedWriter | undefined;
let probe: WriteProbe | undefined;
let leaderWatch: KeyWatch | undefined;
let originalConfig = '';
/** When case (e) started: writes acknowledged before it are checked by the no-loss test. */
let ghostStartedAt = Number.MAX_SAFE_INTEGER;
let marker = 0;

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 3, ttl: TTL, loopWait: LOOP_WAIT, retryTimeout: RETRY_TIMEOUT });
  c.startAll();
  try {
    const leader = await c.waitForLeader(60_000);
    await c.waitForStreaming(
      c.nodes.map((n) => n.name).filter((n) => n !== leader),
      60_000,
    );
    await createSafetyTables(c, leader);
    await c.psql(leader, 'create table ha_marker (id int primary key, member text not null)');
    originalConfig = (await waitFor(() => c.etcdGet('config'), 10_000, 'the config key'))!;
    console.log(`config key at start: ${originalConfig}`);
    writer = startWriter(c);
    probe = startWriteProbe(c);
    leaderWatch = await c.watchKey('leader');
  } catch (e) {
    throw new Error(`${String(e)}\n${c.logs()}`);
  }
});

afterAll(async () => {
  await leaderWatch?.stop();
  await probe?.stop();
  const records = await writer?.stop();
  if (writer) console.log(`writer: ${records?.length} acknowledged writes`, writer.stats());
  await c?.destroy();
});

/** Set once a settle timed out: later cases then wait 15 s only (the cluster is known broken). */
let settleFailed = false;

/** Waits for one primary that holds the key and every other member ready (streaming, not lagging). */
async function settle(timeoutMs = 120_000): Promise<string> {
  if (settleFailed) timeoutMs = Math.min(timeoutMs, 15_000);
  try {
    return await c.settled(timeoutMs, LOG_RE);
  } catch (e) {
    settleFailed = true;
    throw e;
  }
}

/** Changes of the leader name in [fromMs, toMs] (deletions ignored, repeats collapsed), with the full sequence. */
function leaderChanges(fromMs: number, toMs: number): { changes: number; sequence: (string | null)[] } {
  let current: string | null = null;
  const sequence: (string | null)[] = [];
  for (const e of leaderWatch!.events) {
    if (e.at < fromMs) {
      current = e.value ?? null;
      continue;
    }
    if (e.at > toMs) break;
    if (sequence.length === 0) sequence.push(current);
    const v = e.value ?? null;
    if (sequence[sequence.length - 1] !== v) sequence.push(v);
  }
  if (sequence.length === 0) sequence.push(current);
  const names = sequence.filter((x): x is string => x !== null).filter((x, i, a) => i === 0 || a[i - 1] !== x);
  return { changes: Math.max(0, names.length - 1), sequence };
}

/**
 * Writes a marker row on the current leader and waits until every other member holds it and
 * reports `replication_state: streaming`, by `deadlineMs`. Returns the problems (empty: all follow).
 */
async function everyoneFollows(deadlineMs: number): Promise<{ problems: string[]; leader?: string }> {
  const id = ++marker;
  let leader: string | undefined;
  try {
    leader = await waitFor(
      async () => {
        const l = await c.leader();
        if (!l || !(await c.primaries()).includes(l)) return undefined;
        await c.psql(l, `insert into ha_marker values (${id}, '${l}')`, 2000);
        return l;
      },
      Math.max(1000, deadlineMs - Date.now()),
      'a marker row on the leader',
    );
  } catch (e) {
    return { problems: [`no marker row could be written on a leader: ${String(e)}`] };
  }
  const problems: string[] = [];
  for (const n of c.nodes.filter((x) => x.name !== leader)) {
    try {
      await waitFor(
        async () =>
          (await c.psql(n.name, `select member from ha_marker where id = ${id}`, 2000).catch(() => '')).trim() === leader &&
          (await c.get(n.name, '/ha')).json()?.replication_state === 'streaming',
        Math.max(500, deadlineMs - Date.now()),
        `${n.name} streaming from ${leader}`,
      );
    } catch (e) {
      problems.push(String(e));
    }
  }
  return { problems, leader };
}

/** The current config JSON with `patch` merged in (top level). */
function configWith(patch: Record<string, unknown>): string {
  return JSON.stringify({ ...JSON.parse(originalConfig), ...patch });
}

/** Polls GET /primary on every member every `everyMs` until `untilMs`; returns the rounds without exactly one 200. */
async function primariesUntil(untilMs: number, everyMs = 250): Promise<{ rounds: number; bad: { at: number; primaries: string[] }[] }> {
  const bad: { at: number; primaries: string[] }[] = [];
  let rounds = 0;
  while (Date.now() < untilMs) {
    const at = Date.now();
    const p = await c.primaries();
    rounds++;
    if (p.length !== 1) bad.push({ at, primaries: p });
    await sleep(Math.max(0, at + everyMs - Date.now()));
  }
  return { rounds, bad };
}

function printLogs(label: string, sinceMs: number): void {
  console.log(`${label}: agent log lines\n${c.logsMatching(LOG_RE, sinceMs).join('\n')}`);
}

describe('garbage written into the DCS with etcdctl', () => {
  it(`(a) impossible timing {ttl 2, loop_wait 2, retry_timeout 3} for ${IMPOSSIBLE_TIMING_MS / 1000} s: at most one leader change, never two primaries, every member follows within ttl + 2*loop_wait = ${FOLLOW_BOUND_MS / 1000} s of the restore`, async () => {
    await settle();
    const t0 = Date.now();
    await c.etcdPut('config', configWith({ ttl: 2, loop_wait: 2, retry_timeout: 3 }));
    await sleep(IMPOSSIBLE_TIMING_MS);
    await c.etcdPut('config', originalConfig);
    const tRestore = Date.now();
    const follow = await everyoneFollows(tRestore + FOLLOW_BOUND_MS);
    const tEnd = Date.now();
    const { changes, sequence } = leaderChanges(t0, tEnd);
    const doubles = probe!.twoPrimaries(t0, tEnd);
    console.log(
      `(a) leader key sequence: ${JSON.stringify(sequence)}; every member followed ${tEnd - tRestore} ms after the restore; problems: ${JSON.stringify(follow.problems)}`,
    );
    console.log(`(a) writable members seen by the probe:\n${formatTransitions(probe!.transitions(), t0)}`);
    if (changes > 1 || doubles.length > 0 || follow.problems.length > 0) printLogs('(a)', t0);
    expect.soft(changes, 'leader changes (ideally zero)').toBeLessThanOrEqual(1);
    expect.soft(doubles, 'never two members acknowledging writes in one probe round').toEqual([]);
    expect.soft(follow.problems, `every member streams from the leader within ${FOLLOW_BOUND_MS} ms of the restore`).toEqual([]);
  });

  it(`(b) ttl -5: GET /primary answers 200 on exactly one member throughout (${GARBAGE_MS / 1000} s, then 2*loop_wait after the restore)`, async () => {
    const leader = await settle();
    const t0 = Date.now();
    await c.etcdPut('config', configWith({ ttl: -5 }));
    const during = await primariesUntil(t0 + GARBAGE_MS);
    await c.etcdPut('config', originalConfig);
    const after = await primariesUntil(Date.now() + 2 * LOOP_WAIT * 1000);
    const bad = [...during.bad, ...after.bad];
    console.log(`(b) ${during.rounds + after.rounds} rounds of GET /primary, ${bad.length} without exactly one 200 (leader was ${leader})`);
    if (bad.length > 0) {
      console.log(
        `(b) first rounds without exactly one primary: ${JSON.stringify(bad.slice(0, 5).map((b) => ({ at: new Date(b.at).toISOString().slice(11, 23), primaries: b.primaries })))}`,
      );
      console.log(`(b) GET /ha of ${leader}: ${(await c.get(leader, '/ha')).body}`);
      printLogs('(b)', t0);
    }
    expect
      .soft(
        bad.map((b) => b.primaries),
        'rounds where GET /primary did not answer 200 on exactly one member',
      )
      .toEqual([]);
    expect.soft(probe!.twoPrimaries(t0, Date.now()), 'never two members acknowledging writes').toEqual([]);
  });

  it(`(c) loop_wait 2147484: each agent uses less than ${MAX_AGENT_CPU * 100}% of a core over 5 s and the cluster keeps one primary`, async () => {
    const leader = await settle();
    const pids = Object.fromEntries(c.nodes.map((n) => [n.name, c.agentPid(n.name)!]));
    const cpuOver = async (ms: number) => {
      const a = Object.fromEntries(c.nodes.map((n) => [n.name, c.cpuSeconds(pids[n.name]!)]));
      await sleep(ms);
      return Object.fromEntries(
        c.nodes.map((n) => [n.name, Math.round(((c.cpuSeconds(pids[n.name]!) - a[n.name]!) / (ms / 1000)) * 1000) / 1000]),
      );
    };
    const baseline = await cpuOver(5000);
    const t0 = Date.now();
    await c.etcdPut('config', configWith({ loop_wait: 2147484 }));
    await sleep(1000);
    const [cpu, prim] = await Promise.all([cpuOver(5000), primariesUntil(Date.now() + 5000, 500)]);
    await c.etcdPut('config', originalConfig);
    console.log(
      `(c) agent CPU (cores) before: ${JSON.stringify(baseline)}; with loop_wait 2147484: ${JSON.stringify(cpu)}; leader ${leader}`,
    );
    const hot = Object.entries(cpu).filter(([, v]) => v >= MAX_AGENT_CPU);
    if (hot.length > 0 || prim.bad.length > 0) {
      console.log(`(c) rounds without exactly one primary: ${JSON.stringify(prim.bad.slice(0, 5))}`);
      printLogs('(c)', t0);
    }
    expect.soft(hot, `agents using ${MAX_AGENT_CPU} core or more`).toEqual([]);
    expect
      .soft(
        prim.bad.map((b) => b.primaries),
        'rounds where GET /primary did not answer 200 on exactly one member',
      )
      .toEqual([]);
    expect.soft(probe!.twoPrimaries(t0, Date.now()), 'never two members acknowledging writes').toEqual([]);
  });

  it(`(d) failover key {"leader": <leader>, "scheduled_at": "garbage"}: no leader change within 3*loop_wait = ${FAILOVER_QUIET_MS / 1000} s, the key cleared or ignored`, async () => {
    const leader = await settle();
    const tlBefore = (await c.get(leader, '/ha')).json()?.timeline;
    const original = await c.etcdGet('failover');
    const t0 = Date.now();
    const garbage = JSON.stringify({ leader, scheduled_at: 'garbage' });
    await c.etcdPut('failover', garbage);
    await sleep(FAILOVER_QUIET_MS);
    const { changes, sequence } = leaderChanges(t0, Date.now());
    const key = await c.etcdGet('failover');
    const ha = (await c.get(leader, '/ha')).json();
    const cluster = (await c.get(leader, '/cluster')).json();
    console.log(
      `(d) failover key before: ${JSON.stringify(original)}, after ${FAILOVER_QUIET_MS} ms: ${JSON.stringify(key)}; leader key sequence ${JSON.stringify(sequence)}`,
    );
    console.log(
      `(d) GET /ha of ${leader}: ${JSON.stringify(ha)}\n(d) GET /cluster scheduled_switchover: ${JSON.stringify(cluster?.scheduled_switchover)}`,
    );
    if (changes > 0) printLogs('(d)', t0);
    // Restore what was there (absent, or the old value).
    if (original === undefined) await c.etcdDel('failover');
    else await c.etcdPut('failover', original);
    expect.soft(changes, 'leader changes within 3*loop_wait').toBe(0);
    expect.soft(sequence, 'the leader key is untouched').toEqual([leader]);
    expect.soft(ha?.timeline, 'no switchover: same timeline').toBe(tlBefore);
    const cleared = key === undefined || key === '' || key === '{}';
    expect.soft(cleared || key === garbage, `the key is cleared or left as it was (ignored), not acted on: ${key}`).toBe(true);
    expect.soft(probe!.twoPrimaries(t0, Date.now()), 'never two members acknowledging writes').toEqual([]);
  });

  it('no acknowledged write lost in cases (a)–(d)', async () => {
    await settle();
    const r = await assertNoLoss(c, writer!.records(), { timeoutMs: FOLLOW_BOUND_MS });
    console.log('no acknowledged write lost (a)–(d)', r, writer!.stats());
  });

  /*
   * (e) What we do: one `etcdctl put <prefix>/leader ghost-member`. A plain put replaces the
   * holder's value AND detaches the key from its lease in one revision (no gap in which a member
   * could win the create-only race), so the key names a member that has no `members/` key and will
   * never expire on its own: an operator's mistake or a stale restore of the prefix.
   *
   * Expected (docs/ha.md): every member reports the ghost in GET /ha (`ghost_leader`) and does not
   * follow it; after ttl a member deletes the key with a compare-and-set and the race follows.
   * Asserted: within GHOST_RECOVERY_MS = ttl + loop_wait + retry_timeout + wal_retrieve_retry_interval a real member holds the
   * leader key and is the only one answering 200 on GET /primary; GET /ha named the ghost; never two
   * primaries. Acknowledged writes are not asserted here: the holder demoting at once may
   * legitimately drop the last asynchronous commits; the count is printed by the last test.
   */
  it(`(e) leader key naming a non-existent member: reported in /ha, a real primary again within ttl + loop_wait + retry_timeout + wal_retrieve_retry_interval = ${GHOST_RECOVERY_MS / 1000} s`, async () => {
    const leader = await settle();
    await sleep(LOOP_WAIT * 1000);
    ghostStartedAt = Date.now();
    const t0 = ghostStartedAt;
    await c.etcdPut('leader', GHOST);
    const haSeen = new Map<string, string>();
    let recovered: string | undefined;
    let recoveredAfter = -1;
    while (Date.now() - t0 < GHOST_RECOVERY_MS) {
      const [l, p] = await Promise.all([c.leader(), c.primaries()]);
      for (const n of c.nodes) {
        const body = (await c.get(n.name, '/ha')).body;
        if (!haSeen.has(n.name) && (await c.get(n.name, '/ha')).json()?.ghost_leader === GHOST) haSeen.set(n.name, body);
      }
      if (l && l !== GHOST && p.length === 1 && p[0] === l) {
        recovered = l;
        recoveredAfter = Date.now() - t0;
        break;
      }
      await sleep(250);
    }
    const { sequence } = leaderChanges(t0, Date.now());
    console.log(
      `(e) old leader ${leader}; leader key sequence ${JSON.stringify(sequence)}; recovered: ${recovered ?? 'no'} after ${recoveredAfter} ms`,
    );
    console.log(
      `(e) GET /ha bodies mentioning "${GHOST}": ${haSeen.size === 0 ? 'none' : [...haSeen.entries()].map(([n, b]) => `\n  ${n}: ${b}`).join('')}`,
    );
    if (!recovered) {
      for (const n of c.nodes) console.log(`(e) GET /ha of ${n.name} at the bound: ${(await c.get(n.name, '/ha')).body}`);
      printLogs('(e)', t0);
      // Clean up so the rest of the file runs on a working cluster: remove the bogus key.
      if ((await c.leader()) === GHOST) await c.etcdDel('leader');
    }
    expect.soft(probe!.twoPrimaries(t0, Date.now()), 'never two members acknowledging writes').toEqual([]);
    expect(recovered, `a real member holds the leader key and is the only primary within ${GHOST_RECOVERY_MS} ms`).toBeDefined();
    expect(haSeen.size, 'GET /ha names the ghost leader (ghost_leader) on at least one member').toBeGreaterThan(0);
  });

  it('over the whole file: never two members acknowledging writes in one probe round', async () => {
    await settle().catch(() => undefined);
    const doubles = probe!.twoPrimaries();
    console.log(`probe: ${probe!.rounds()} rounds, ${doubles.length} with two primaries`, doubles.slice(0, 10));
    const records = writer!.records();
    try {
      const r = await assertNoLoss(c, records, { timeoutMs: FOLLOW_BOUND_MS });
      console.log('every acknowledged write of the whole file is on every member', r);
    } catch (e) {
      const before = records.filter((x) => x.at < ghostStartedAt);
      console.log(`acknowledged writes over the whole file (not asserted after case (e) started): ${String(e)}`);
      await assertNoLoss(c, before, { timeoutMs: FOLLOW_BOUND_MS });
    }
    expect(doubles).toEqual([]);
  });
});
