/**
 * Switchover storm (issue "Safety bugs found under faults"): 200 concurrent POST /switchover
 * {"leader": <leader>} on the leader's API, three times in a row, on a real 3-node cluster
 * (ttl 10, loop_wait 2, retry_timeout 3) with a recorded writer and a write probe running.
 *
 * Each storm must give exactly one switchover: the leader key changes once (old → new, no
 * take-back), the timeline grows by exactly one (one new `history` entry naming the new
 * leader), no acknowledged write is lost, never two members acknowledge writes in the same probe
 * round, and every member (the old leader included) holds a row written on the new leader within
 * FOLLOW_BOUND_MS = (ttl + 2*loop_wait) s of the first request.
 *
 * The answers are counted and printed; asserted only: at least one 200 "Successfully switched
 * over", every 200 names the new leader, every other answer is a 409/412 refusal or a 503.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../support/processes.ts';
import { TestCluster, type KeyEvent, type KeyWatch } from './support/cluster.ts';
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
/** Concurrent requests per storm. */
const STORM = 200;
/** From the first request: every member holds a row written on the new leader. ttl + 2*loop_wait. */
const FOLLOW_BOUND_MS = (TTL + 2 * LOOP_WAIT) * 1000;
/** The leader key is still watched this long after everything settled: 2*loop_wait + retry_timeout. */
const QUIET_AFTER_MS = (2 * LOOP_WAIT + RETRY_TIMEOUT) * 1000;
/** Client timeout of one request: the API polls at most 2*max(10, loop_wait) s, plus slack. */
const REQUEST_TIMEOUT_MS = 2 * Math.max(10, LOOP_WAIT) * 1000 + 10_000;
/** Statuses a storm may answer besides 200: refusals (409, 412) and 503. */
const ALLOWED_REFUSALS = new Set([409, 412, 503]);
const LOG_RE = /leader|lock|promot|demot|switch|follow|timeline|reinit|secondary|diverg/i;

let c: TestCluster;
let writer: RecordedWriter | undefined;
let probe: WriteProbe | undefined;
let leaderWatch: KeyWatch | undefined;

beforeAll(async () => {
  // The storm must reach the switchover logic: lift the bound on unsafe requests in flight
  // (restapi.max_unsafe_requests) above the storm's size, so all 200 race for the failover key.
  c = await TestCluster.create({
    nodes: 3,
    ttl: TTL,
    loopWait: LOOP_WAIT,
    retryTimeout: RETRY_TIMEOUT,
    restapi: { max_unsafe_requests: 256 },
  });
  c.startAll();
  try {
    const leader = await c.waitForLeader(60_000);
    await c.waitForStreaming(
      c.nodes.map((n) => n.name).filter((n) => n !== leader),
      60_000,
    );
    await createSafetyTables(c, leader);
    await c.psql(leader, 'create table ha_marker (round int primary key, member text not null)');
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

/** Leader names in [fromMs, toMs], deletions as null, consecutive repeats collapsed; starts with the value at fromMs. */
function leaderSequence(events: readonly KeyEvent[], fromMs: number, toMs: number): (string | null)[] {
  let current: string | null = null;
  const seq: (string | null)[] = [];
  for (const e of events) {
    if (e.at < fromMs) {
      current = e.value ?? null;
      continue;
    }
    if (e.at > toMs) break;
    if (seq.length === 0) seq.push(current);
    const v = e.value ?? null;
    if (seq[seq.length - 1] !== v) seq.push(v);
  }
  if (seq.length === 0) seq.push(current);
  return seq;
}

/** Waits for one primary that holds the key and every other member ready (streaming, not lagging). */
function settle(timeoutMs = 90_000): Promise<string> {
  return c.settled(timeoutMs, LOG_RE);
}

function historyOf(text: string | undefined): unknown[][] {
  try {
    const h = JSON.parse(text ?? '[]');
    return Array.isArray(h) ? h : [];
  } catch {
    return [];
  }
}

describe(`switchover storm: ${STORM} concurrent POST /switchover on the leader, three times`, () => {
  for (const round of [1, 2, 3]) {
    it(`storm ${round}: exactly one leader change, timeline +1, no acknowledged write lost, never two primaries, every member follows within ttl + 2*loop_wait = ${FOLLOW_BOUND_MS / 1000} s`, async () => {
      const old = await settle();
      await sleep(LOOP_WAIT * 1000);
      const haBefore = (await c.get(old, '/ha')).json();
      const tlBefore = Number(haBefore?.timeline);
      const historyBefore = historyOf(await c.etcdGet('history'));
      expect(tlBefore).toBeGreaterThan(0);

      const t0 = Date.now();
      const answers = await Promise.all(
        Array.from({ length: STORM }, () => c.post(old, '/switchover', { leader: old }, REQUEST_TIMEOUT_MS)),
      );
      const tAnswered = Date.now();

      const tally = new Map<string, number>();
      for (const a of answers) {
        const k = a.status === 0 ? `no answer: ${a.error}` : `${a.status} ${a.body.trim().slice(0, 120)}`;
        tally.set(k, (tally.get(k) ?? 0) + 1);
      }
      console.log(
        `storm ${round} on ${old}: answers within ${tAnswered - t0} ms\n${[...tally.entries()].map(([k, n]) => `  ${String(n).padStart(3)} × ${k}`).join('\n')}`,
      );

      // The new leader: the first leader key value other than the old leader's after t0.
      const next = await waitFor(
        () => leaderWatch!.events.find((e) => e.at >= t0 && e.value !== undefined && e.value !== old)?.value,
        FOLLOW_BOUND_MS,
        'a new leader',
      ).catch(() => undefined);
      const problems: string[] = [];
      const follow: Record<string, number | string> = {};
      if (next) {
        // A row written on the new leader once it accepts writes; every member must hold it.
        const deadline = t0 + FOLLOW_BOUND_MS;
        try {
          await waitFor(
            async () => {
              const l = await c.leader();
              if (!l || l !== next) return false;
              await c.psql(next, `insert into ha_marker values (${round}, '${next}')`, 2000);
              return true;
            },
            Math.max(1000, deadline - Date.now()),
            `a marker row written on ${next}`,
          );
          follow[next] = Date.now() - t0;
          await Promise.all(
            c.nodes
              .filter((x) => x.name !== next)
              .map(async (n) => {
                try {
                  await waitFor(
                    async () =>
                      (await c.psql(n.name, `select member from ha_marker where round = ${round}`, 2000).catch(() => '')).trim() === next,
                    Math.max(500, deadline - Date.now()),
                    `the marker row on ${n.name}`,
                  );
                  follow[n.name] = Date.now() - t0;
                } catch (e) {
                  follow[n.name] = String(e);
                  problems.push(
                    `${n.name} does not hold the row written on ${next} within ${FOLLOW_BOUND_MS} ms of the storm (GET /ha: ${(await c.get(n.name, '/ha')).body})`,
                  );
                }
              }),
          );
        } catch (e) {
          problems.push(`no row could be written on ${next}: ${String(e)}`);
        }
      } else {
        problems.push(`the leader key never named another member than ${old} within ${FOLLOW_BOUND_MS} ms`);
      }
      console.log(`storm ${round}: ms from the first request until each member held the new leader's row`, follow);

      // Keep watching the leader key for a while after everything settled (a take-back shows here).
      const watchUntil = Math.max(Date.now(), tAnswered) + QUIET_AFTER_MS;
      await sleep(watchUntil - Date.now());
      const seq = leaderSequence(leaderWatch!.events, t0, watchUntil);
      console.log(`storm ${round}: leader key sequence (null = deleted): ${JSON.stringify(seq)}`);
      console.log(`storm ${round}: writable members seen by the probe:\n${formatTransitions(probe!.transitions(), t0 - 1000)}`);

      const statuses = answers.map((a) => a.status);
      const successes = answers.filter((a) => a.status === 200);
      const notAllowed = answers.filter((a) => a.status !== 200 && !ALLOWED_REFUSALS.has(a.status));

      // Timelines and the history key, once every member follows.
      const tl: Record<string, unknown> = {};
      let historyAfter: unknown[][] = [];
      if (next) {
        await waitFor(
          async () => {
            for (const n of c.nodes) tl[n.name] = (await c.get(n.name, '/ha')).json()?.timeline;
            historyAfter = historyOf(await c.etcdGet('history'));
            return c.nodes.every((n) => tl[n.name] === tlBefore + 1) && historyAfter.length === historyBefore.length + 1;
          },
          Math.max(1000, t0 + FOLLOW_BOUND_MS + QUIET_AFTER_MS - Date.now()),
          'timelines and history',
        ).catch(() => undefined);
      }
      console.log(`storm ${round}: timeline before ${tlBefore}, after`, tl, `history after ${JSON.stringify(historyAfter)}`);

      let loss = '';
      try {
        const r = await assertNoLoss(c, writer!.records(), { timeoutMs: FOLLOW_BOUND_MS });
        console.log(`storm ${round}: no acknowledged write lost`, r);
      } catch (e) {
        loss = String(e);
      }
      const doubles = probe!.twoPrimaries(t0, Date.now());
      const failed =
        problems.length > 0 ||
        loss !== '' ||
        doubles.length > 0 ||
        !(seq.length <= 3 && seq[0] === old && seq[seq.length - 1] === next && !seq.slice(1).includes(old));
      if (failed) console.log(`storm ${round}: agent log lines since the storm\n${c.logsMatching(LOG_RE, t0 - 500).join('\n')}`);

      expect.soft(successes.length, 'at least one 200 answer').toBeGreaterThan(0);
      for (const s of successes) expect.soft(s.body, 'every 200 names the new leader').toBe(`Successfully switched over to "${next}"`);
      expect
        .soft(
          notAllowed.map((a) => `${a.status} ${a.body || a.error}`),
          `statuses other than 200/409/412/503 (${[...new Set(statuses)].join(',')})`,
        )
        .toEqual([]);
      // Exactly one change: old, (deleted,) new. A take-back (old, deleted, old, …) or a second change fails.
      expect
        .soft(
          [
            [old, null, next],
            [old, next],
          ],
          'the leader key changes exactly once: old → (deleted →) new, never back',
        )
        .toContainEqual(seq);
      expect.soft(problems, 'every member follows the new leader in time').toEqual([]);
      expect.soft(loss, 'no acknowledged write lost').toBe('');
      expect.soft(doubles, 'never two members acknowledging writes in one probe round').toEqual([]);
      for (const n of c.nodes) expect.soft(tl[n.name], `timeline of ${n.name} is the old one + 1`).toBe(tlBefore + 1);
      expect.soft(historyAfter.length, 'exactly one new history entry').toBe(historyBefore.length + 1);
      const last = historyAfter[historyAfter.length - 1];
      expect.soft(last?.[0], 'the new history entry closes the old timeline').toBe(tlBefore);
      if (last && last.length >= 5) expect.soft(last[4], 'the new history entry names the new leader').toBe(next);
    });
  }
});
