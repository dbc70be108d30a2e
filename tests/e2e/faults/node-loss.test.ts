/**
 * The leader's node lost, under the default configuration (issue 24: nothing set under `database`
 * about rewind or removal), on a real 3-node cluster (ttl 10, loop_wait 2, retry_timeout 3) with
 * the write probe running (one INSERT per member every 100 ms), twice in a row:
 *
 * 1. kill -9 of the leader's agent, its postmaster and every child together (a lost machine:
 *    pg_controldata says `in production`, no shutdown checkpoint, and no walsender ships the last
 *    WAL);
 * 2. a replica takes over within FAILOVER_BOUND_MS; a row is written on it;
 * 3. the lost node's agent is started again: within REJOIN_BOUND_MS it streams from the new leader
 *    and holds that row. Where its WAL ends is read from the WAL (docs/ha.md "Divergence"): at or
 *    before the new timeline's switch point it starts as a replica; past it (WAL the replicas had
 *    not received yet) pg_rewind, the default, rewinds it. Either way it heals by itself, and the
 *    receipt lists what a rewind discarded.
 *
 * Before the WAL-end rule every such node counted as diverged and stayed stopped.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../support/processes.ts';
import { TestCluster } from '../support/cluster.ts';
import { loseMember } from '../support/sync.ts';
import { receiptProblems, receiptsOf, relationPaths, txidsOn } from '../support/receipts.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, type WriteProbe } from '../support/writer.ts';
import { T } from './timing.ts';

/** A new writable primary after the loss: lease expiry (ttl) + a cycle (loop_wait) + two DCS calls (2 × retry_timeout) + promotion slack. */
const FAILOVER_BOUND_MS = (T.ttl + T.loop_wait + 2 * T.retry_timeout) * 1000 + 5_000;
/**
 * Back as a streaming replica after the restart: the agent's start and first cycle and the next
 * (2 × loop_wait), their DCS calls (2 × retry_timeout), the not-streaming grace
 * (max(2 × loop_wait, retry_timeout)), plus 20 s for the tools (pg_waldump, crash recovery and
 * pg_rewind, or a start) on a small database and a loaded 2-core machine.
 */
const REJOIN_BOUND_MS = (2 * T.loop_wait + 2 * T.retry_timeout + Math.max(2 * T.loop_wait, T.retry_timeout)) * 1000 + 20_000;
const LOG_RE = /leader|lock|promot|demot|diverg|rewind|clone|reinit|secondary|stop|start|discard/i;

let c: TestCluster;
let probe: WriteProbe | undefined;
let tStart = 0;
const figures: string[] = [];

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 3, ttl: T.ttl, loopWait: T.loop_wait, retryTimeout: T.retry_timeout });
  c.startAll();
  try {
    const leader = await c.settled(120_000, LOG_RE);
    await createSafetyTables(c, leader);
    tStart = Date.now();
    probe = startWriteProbe(c);
  } catch (e) {
    throw new Error(`${String(e)}\n${c.logs()}`);
  }
});

afterAll(async () => {
  await probe?.stop();
  if (figures.length) console.log(`node-loss figures:\n${figures.join('\n')}`);
  await c?.destroy();
});

describe('the leader node lost, its agent started again (default configuration)', () => {
  for (const round of [1, 2]) {
    it(`round ${round}: a new primary within ${FAILOVER_BOUND_MS / 1000} s, the old node streaming from it with its row within ${REJOIN_BOUND_MS / 1000} s of the restart, never two primaries`, async () => {
      const old = await c.settled(120_000, LOG_RE);
      const t0 = Date.now();
      await loseMember(c, old);
      const next = await c.waitForLeader(FAILOVER_BOUND_MS, old).catch((e) => {
        throw new Error(`no new leader within ${FAILOVER_BOUND_MS} ms: ${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}`);
      });
      await waitFor(async () => (await c.primaries()).includes(next), FAILOVER_BOUND_MS, `${next} writable`);
      const failoverMs = Date.now() - t0;
      const marker = 800_000 + round;
      await waitFor(
        async () => {
          await c.psql(next, `insert into ha_writer (id, member) values (${marker}, '${next}') on conflict do nothing`, 2000);
          return true;
        },
        20_000,
        `a row written on ${next}`,
      );

      const tRestart = Date.now();
      c.start(old);
      await waitFor(
        async () => {
          if ((await c.get(old, '/replica')).status !== 200 || (await c.get(old, '/ha')).json()?.replication_state !== 'streaming')
            return false;
          return (await c.psql(old, `select count(*) from ha_writer where id = ${marker}`, 2000).catch(() => '')).trim() === '1';
        },
        REJOIN_BOUND_MS,
        `${old} streaming from ${next} and holding row ${marker}`,
      ).catch((e) => {
        throw new Error(`${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}\n==== ${old} output\n${c.node(old).output.slice(-8000)}`);
      });
      const rejoinMs = Date.now() - tRestart;
      const lines = c.logsMatching(/./, tRestart).filter((l) => l.includes(` ${old} `));
      const rewound = lines.some((l) => /pg_rewind from \S+ done/.test(l));
      figures.push(
        `round ${round}: ${old} lost; ${next} writable after ${failoverMs} ms (bound ${FAILOVER_BOUND_MS}); ${old} streaming with the new row ${rejoinMs} ms after its restart (bound ${REJOIN_BOUND_MS}), ${rewound ? 'rewound' : 'no rewind needed'}`,
      );
      expect(failoverMs).toBeLessThanOrEqual(FAILOVER_BOUND_MS);
      expect(
        lines.filter((l) => /not starting: diverged/.test(l)),
        `${old} never stays stopped as diverged`,
      ).toEqual([]);
      expect(
        lines.filter((l) => /bootstrap from|reinitializ|basebackup/i.test(l)),
        `${old} was not copied again`,
      ).toEqual([]);
      expect(probe!.twoPrimaries(tStart), `two members acknowledged writes:\n${formatTransitions(probe!.transitions(), t0)}`).toEqual([]);
      // What a rewind discarded is in its receipt, exactly (the probe's writes it acknowledged that the new leader lacks).
      const receipts = await receiptsOf(c, old);
      const acknowledged = new Map(
        probe!
          .acknowledged()
          .filter((a) => a.member === old)
          .map((a) => [a.xid, `probe write at ${new Date(a.at).toISOString()}`]),
      );
      const problems = receiptProblems({
        receipts,
        acknowledgedOnMember: acknowledged,
        onLeader: await txidsOn(c, next, old),
        clientRelations: await relationPaths(c, next),
        killedAtMs: t0,
      });
      expect(problems).toEqual([]);
      if (!rewound)
        expect(
          receipts.filter((r) => Date.parse(r.at) >= t0),
          'no rewind, no receipt',
        ).toEqual([]);
      await sleep(500);
    });
  }

  it("no password in any log: the agents' and PostgreSQL's own (primary_conninfo names a password file, issue 30)", async () => {
    const secrets = ['e2e-super', 'e2e-repl'];
    const pgLogs = c.nodes.map((n) => join(dirname(n.dataDir), `${n.name}.log`));
    for (const f of pgLogs) expect(existsSync(f), f).toBe(true);
    const files = [...pgLogs, ...c.nodes.map((n) => n.logPath).filter((f) => existsSync(f))];
    const found: string[] = [];
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const secret of secrets) if (text.includes(secret)) found.push(`${f}: ${text.split('\n').find((l) => l.includes(secret))}`);
    }
    for (const n of c.nodes) for (const secret of secrets) if (n.output.includes(secret)) found.push(`${n.name}'s agent output`);
    // The PostgreSQL logs did record the reloads that changed primary_conninfo (followed new leaders).
    expect(files.some((f) => /parameter "primary_conninfo" changed/.test(readFileSync(f, 'utf8')))).toBe(true);
    expect(found).toEqual([]);
  });
});
