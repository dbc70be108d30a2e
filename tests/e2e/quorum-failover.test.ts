/**
 * Quorum failover (issue 28; docs/ha.md "Quorum failover") on real etcd, PostgreSQL and agents at
 * the default timing (ttl 30, loop_wait 10, retry_timeout 10), `synchronous_mode: quorum`,
 * `synchronous_mode_strict: true`, `quorum_failover_window: 2`, 3 and 5 members. The recorded writer
 * commits one row at a time through whichever member answers 200 on /primary.
 *
 * The leader's node is lost (kill -9 of its agent, its postmaster and its children together)
 * LOSSES times in a row, the lost member started again after each. Each time: a new primary
 * takes the leader key from the fenced one well before the lease would have expired, within
 * QUORUM_BOUND_MS = (window + retry_timeout) s + TOOLS_MS (the window, then one DCS round of each
 * standby's fence record and the take, bounded by retry_timeout, then the promotion), against
 * ttl for the lease, and the first acknowledged write within FIRST_WRITE_BOUND_MS (one loop_wait
 * more: the new primary's synchronous set grows in its HA cycle); a write probe asserts that no
 * two members ever acknowledge writes in the same round; at the end every acknowledged write is on
 * every member.
 */
import { describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';
import { loseMember, waitSyncReady } from './support/sync.ts';
import { assertNoLoss, createSafetyTables, formatTransitions, startWriteProbe, startWriter } from './support/writer.ts';

const TTL = 30;
const LOOP_WAIT = 10;
const RETRY_TIMEOUT = 10;
const WINDOW_S = 2;
const LOSSES = 5;
/** The promotion and a loaded 2-core machine's delays, ms. */
const TOOLS_MS = 5000;
/** From the kill to the new leader key: the window, one DCS round (retry_timeout), the tools. */
const QUORUM_BOUND_MS = (WINDOW_S + RETRY_TIMEOUT) * 1000 + TOOLS_MS;
/**
 * From the kill to the first acknowledged write: the leader key, then up to one loop_wait, as the
 * new primary's synchronous set is grown by its HA cycle (strict: nothing is acknowledged before).
 */
const FIRST_WRITE_BOUND_MS = QUORUM_BOUND_MS + LOOP_WAIT * 1000;

describe.each([3, 5])('quorum failover on %i members: synchronous standbys fence a lost primary before its lease runs out', (nodes) => {
  it(`${LOSSES} leader losses in a row at ttl ${TTL}: a new leader within ${QUORUM_BOUND_MS / 1000} s each, no acknowledged write lost, never two writers`, async () => {
    const c = await TestCluster.create({
      nodes,
      ttl: TTL,
      loopWait: LOOP_WAIT,
      retryTimeout: RETRY_TIMEOUT,
      dcsExtra: ['synchronous_mode: quorum', 'synchronous_mode_strict: true', `quorum_failover_window: ${WINDOW_S}`],
    });
    c.startAll();
    let writer: ReturnType<typeof startWriter> | undefined;
    let probe: ReturnType<typeof startWriteProbe> | undefined;
    const figures: string[] = [];
    try {
      const first = await waitSyncReady(c, nodes - 1);
      await createSafetyTables(c, first);
      writer = startWriter(c);
      probe = startWriteProbe(c);
      for (let i = 0; i < LOSSES; i++) {
        const leader = await waitSyncReady(c, nodes - 1);
        await sleep(1500);
        const ackedBefore = writer.stats().acked;
        const t0 = Date.now();
        await loseMember(c, leader);
        const next = await c.waitForLeader(TTL * 1000 + 30_000, leader);
        const took = Date.now() - t0;
        // The first write acknowledged after the loss (on the new primary).
        await waitFor(async () => (writer!.stats().acked > ackedBefore ? true : undefined), 60_000, 'a write acknowledged after the loss');
        const firstWriteMs = Date.now() - t0;
        const took2 = c.logsMatching(/took the leader key from/, t0).length > 0;
        figures.push(
          `loss ${i + 1}: ${leader} -> ${next}: leader key in ${took} ms, first acknowledged write within ${firstWriteMs} ms; taken by quorum: ${took2}`,
        );
        expect(
          took,
          `loss ${i + 1}: ${leader} -> ${next} took ${took} ms\n${c.logsMatching(/fence|took the leader|quorum|promot/i, t0).join('\n')}`,
        ).toBeLessThanOrEqual(QUORUM_BOUND_MS);
        expect(took2).toBe(true);
        expect(firstWriteMs, `loss ${i + 1}: first acknowledged write ${firstWriteMs} ms after the kill`).toBeLessThanOrEqual(
          FIRST_WRITE_BOUND_MS,
        );
        c.start(leader);
      }
      await waitSyncReady(c, nodes - 1);
      await sleep(1500);
      const records = await writer.stop();
      writer = undefined;
      const overlaps = probe.twoPrimaries();
      expect(overlaps, formatTransitions(overlaps)).toEqual([]);
      await probe.stop();
      probe = undefined;
      await assertNoLoss(c, records);
      console.log(`[quorum-failover] ${nodes} members\n${figures.join('\n')}`);
    } catch (e) {
      throw new Error(
        `${String(e)}\n${c
          .logsMatching(/fence|took the leader|quorum|promot|sync/i, 0)
          .slice(-60)
          .join('\n')}`,
      );
    } finally {
      await writer?.stop().catch(() => undefined);
      await probe?.stop().catch(() => undefined);
      await c.destroy();
    }
  }, 900_000);
});
