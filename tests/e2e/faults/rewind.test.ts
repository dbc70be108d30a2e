/**
 * Rejoin by pg_rewind under the default configuration (issue 24: nothing set under `database`
 * about rewind or removal; docs/ha.md "Divergence", "Rewind", "Receipts"), on a real 3-node cluster
 * (ttl 10, loop_wait 2, retry_timeout 3) with the write probe running (one INSERT per member
 * every 100 ms):
 *
 * "A former primary that really diverged (rows written while its replicas were cut off): rejoins
 * by itself, its receipt lists exactly those transactions, it never runs diverged."
 *
 * Recipe (WAL nobody received: as tests/e2e/diverged-primary.test.ts, the leader's walsenders are
 * SIGSTOPped, so nothing more reaches the replicas while their walreceivers stay connected):
 * 1. SIGSTOP the leader's walsenders; insert rows on the leader, one transaction each, noting each
 *    one's transaction id: they exist only there (as do the probe's writes it acknowledges then).
 * 2. SIGKILL the leader's agent, its postmaster and the frozen walsenders together (a crash:
 *    pg_controldata says `in production`, no shutdown checkpoint).
 * 3. A replica is promoted; rows are written on it.
 * 4. The old node's agent is started again.
 *
 * Asserted: within REJOIN_BOUND_MS of the restart the old node is a streaming replica of the new
 * leader, holds the new rows and none of its lost ones; while it holds them it never answers 200
 * on GET /replica; its agent log says pg_rewind (crash recovery in single-user mode, then the
 * rewind) and never a base backup; its receipt (GET /discarded) lists as committed exactly the
 * transactions it acknowledged that the new leader lacks (the lost rows and the probe's writes
 * of that time), and /ha and /metrics count it; no probe round saw two members acknowledge
 * writes; a new leader within FAILOVER_BOUND_MS.
 *
 * Then the soak's sequence that once left a replica that never streamed again (issue 24): the
 * rewound node, streaming from the new leader, is lost (kill -9 of agent, postmaster and
 * children) seconds later and its agent started again. Its restartpoint is still on the old
 * timeline while its WAL is on the new leader's: it must be judged on that timeline (no false
 * divergence, no second rewind, no single-user recovery writing WAL the leader lacks) and stream
 * again within REJOIN_BOUND_MS, holding a row written meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../support/processes.ts';
import { TestCluster } from '../support/cluster.ts';
import { createSafetyTables, formatTransitions, startWriteProbe, TXID_SQL, type WriteProbe } from '../support/writer.ts';
import { loseMember } from '../support/sync.ts';
import { readControlData } from '../../../src/postgres/controldata.ts';
import { pgBinDir } from '../../support/pg.ts';
import { receiptProblems, receiptsOf, relationPaths, txidsOn } from '../support/receipts.ts';

const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 3;
/** A new writable primary after the crash: lease expiry (ttl) + a cycle (loop_wait) + two DCS calls (2 × retry_timeout) + promotion slack. */
const FAILOVER_BOUND_MS = (TTL + LOOP_WAIT + 2 * RETRY_TIMEOUT) * 1000 + 5_000;
/**
 * Back as a streaming replica after the agent restart: the agent's start and first cycle
 * (loop_wait), the divergence check (a cycle: loop_wait), crash recovery + pg_rewind + start as a
 * replica (bounded by retry_timeout each for its DCS calls, 20 s allowance for the tools on a small
 * database and a loaded 2-core machine), streaming seen within max(2 × loop_wait, retry_timeout).
 */
const REJOIN_BOUND_MS = (2 * LOOP_WAIT + 2 * RETRY_TIMEOUT + Math.max(2 * LOOP_WAIT, RETRY_TIMEOUT)) * 1000 + 20_000;
const LOST = { from: 1, to: 50 };
const NEW = { from: 1001, to: 1020 };
const LOG_RE = /leader|lock|promot|demot|diverg|rewind|clone|bootstrap|reinit|secondary|stop|start/i;

let c: TestCluster;
let probe: WriteProbe | undefined;
const frozen = new Set<number>();
let tStart = 0;

beforeAll(async () => {
  // The default configuration: nothing under `database` about rewind or removal.
  c = await TestCluster.create({ nodes: 3, ttl: TTL, loopWait: LOOP_WAIT, retryTimeout: RETRY_TIMEOUT });
  c.startAll();
  try {
    const leader = await c.settled(120_000, LOG_RE);
    await createSafetyTables(c, leader);
    await c.psql(leader, `create table ha_rewind (id int primary key, note text not null, txid bigint not null default ${TXID_SQL})`);
    for (const n of c.nodes) {
      await waitFor(
        async () => (await c.psql(n.name, "select to_regclass('ha_rewind') is not null", 2000).catch(() => '')).trim() === 't',
        30_000,
        `ha_rewind on ${n.name}`,
      );
    }
    tStart = Date.now();
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

async function count(name: string, range: { from: number; to: number }): Promise<number | undefined> {
  try {
    return Number((await c.psql(name, `select count(*) from ha_rewind where id between ${range.from} and ${range.to}`, 2000)).trim());
  } catch {
    return undefined;
  }
}

const hhmmss = (ms: number) => new Date(ms).toISOString().slice(11, 23);

describe('a primary that crashed holding WAL nobody received', () => {
  it(`rejoins by pg_rewind within ${REJOIN_BOUND_MS / 1000} s of its agent's restart, with the new leader's rows and not its lost ones; never two primaries`, async () => {
    const old = await c.waitForLeader(10_000);
    const replicas = c.nodes.map((n) => n.name).filter((n) => n !== old);
    const agent = c.agentPid(old);
    const postmaster = c.postmasterPid(old);
    const senders = c.postgresChildren(old, 'walsender');
    expect(agent).toBeGreaterThan(0);
    expect(postmaster).toBeGreaterThan(0);
    expect(senders.length, `walsenders on ${old}`).toBe(replicas.length);
    expect((await c.psql(old, 'show wal_log_hints')).trim(), 'wal_log_hints (the agent writes it on by default)').toBe('on');

    // 1. WAL nobody receives.
    for (const pid of senders) {
      frozen.add(pid);
      process.kill(pid, 'SIGSTOP');
    }
    const tFrozen = Date.now();
    const lostXids = new Map<number, string>();
    for (let id = LOST.from; id <= LOST.to; id++) {
      const xid = Number((await c.psql(old, `insert into ha_rewind values (${id}, 'only on the old primary') returning txid`)).trim());
      lostXids.set(xid, `lost row ${id}`);
    }
    await sleep(1000);
    for (const r of replicas) expect(await count(r, LOST), `the lost rows must not reach ${r} (recipe check)`).toBe(0);
    expect(await count(old, LOST)).toBe(LOST.to - LOST.from + 1);

    // 2. Crash: agent, postmaster and the frozen walsenders at once.
    const tCrash = Date.now();
    for (const pid of [agent!, postmaster!, ...senders]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      frozen.delete(pid);
    }

    // 3. A new leader, with rows of its own.
    const next = await c.waitForLeader(FAILOVER_BOUND_MS, old).catch((e) => {
      throw new Error(
        `no new leader within ${FAILOVER_BOUND_MS} ms of the crash: ${String(e)}\n${c.logsMatching(LOG_RE, tCrash).join('\n')}`,
      );
    });
    await waitFor(
      async () => {
        await c.psql(
          next,
          `insert into ha_rewind select g, 'written on the new leader' from generate_series(${NEW.from}, ${NEW.to}) g on conflict do nothing`,
          2000,
        );
        return true;
      },
      20_000,
      `a write on ${next}`,
    );
    const tElected = Date.now();
    expect(tElected - tCrash, `new leader within ${FAILOVER_BOUND_MS} ms`).toBeLessThan(FAILOVER_BOUND_MS + 20_000);

    // 4. The old node's agent again.
    const tRestart = Date.now();
    c.start(old);
    let rejoinedAt: number | undefined;
    let last = '';
    const samples: string[] = [];
    const servedDiverged: string[] = [];
    while (Date.now() - tRestart < REJOIN_BOUND_MS) {
      const ha = await c.get(old, '/ha');
      const doc = ha.json();
      const lost = await count(old, LOST);
      const fresh = await count(old, NEW);
      const sample = `${doc?.state ?? '-'}/${doc?.role ?? '-'} streaming=${doc?.replication_state ?? '-'} tl=${doc?.timeline ?? '-'} lost=${lost ?? '-'} new=${fresh ?? '-'}${doc?.diverged ? ` diverged=${doc.diverged}` : ''}`;
      if (sample !== last) {
        samples.push(`${hhmmss(Date.now())} ${sample}`);
        last = sample;
      }
      // Never runs diverged: while it holds the lost rows, it is no replica to send reads to.
      if (lost !== undefined && lost > 0 && (await c.get(old, '/replica')).status === 200)
        servedDiverged.push(`${hhmmss(Date.now())} ${sample}`);
      if (
        doc?.state === 'running' &&
        doc?.role === 'replica' &&
        doc?.replication_state === 'streaming' &&
        lost === 0 &&
        fresh === NEW.to - NEW.from + 1
      ) {
        rejoinedAt = Date.now();
        break;
      }
      await sleep(250);
    }
    const oldLog = c.logsMatching(/./, tRestart).filter((l) => l.includes(` ${old} `));
    console.log(
      `${old} crashed at ${hhmmss(tCrash)}; ${next} elected by ${hhmmss(tElected)} (+${tElected - tCrash} ms); agent restarted at ${hhmmss(tRestart)}`,
    );
    console.log(`${old} after the restart:\n  ${samples.join('\n  ')}`);
    console.log(`rejoined: ${rejoinedAt ? `+${rejoinedAt - tRestart} ms after the restart` : 'no'}`);
    console.log(`agent log lines since the crash\n${c.logsMatching(LOG_RE, tCrash).join('\n')}`);
    console.log(`writable members seen by the probe:\n${formatTransitions(probe!.transitions(), tCrash - 1000)}`);

    expect(rejoinedAt, `${old} a streaming replica holding the new rows and not the lost ones within ${REJOIN_BOUND_MS} ms`).toBeDefined();
    expect
      .soft(
        oldLog.some((l) => /running pg_rewind from/.test(l)),
        `${old}'s log says pg_rewind`,
      )
      .toBe(true);
    expect
      .soft(
        oldLog.some((l) => /pg_rewind from \S+ done/.test(l)),
        `${old}'s log says the rewind succeeded`,
      )
      .toBe(true);
    expect
      .soft(
        oldLog.filter((l) => /bootstrap from|reinitializ|basebackup/i.test(l)),
        `${old} was not copied again`,
      )
      .toEqual([]);
    expect.soft(await c.primaries(), 'the only primary').toEqual([next]);
    const other = replicas.find((r) => r !== next)!;
    expect.soft(await count(other, LOST), `${other} lacks the lost rows`).toBe(0);
    expect.soft(probe!.twoPrimaries(tStart), 'no probe round with two members acknowledging writes').toEqual([]);
    // The rewound node follows the new leader's timeline.
    const tl = async (n: string) => Number((await c.get(n, '/ha')).json()?.timeline ?? 0);
    expect.soft(await tl(old)).toBe(await tl(next));
    expect.soft(servedDiverged, `${old} answered 200 on /replica while holding the lost rows`).toEqual([]);

    // The receipt: exactly the transactions it acknowledged (ours, the probe's) that the new leader lacks.
    const receipts = await receiptsOf(c, old);
    const acknowledged = new Map(lostXids);
    for (const a of probe!.acknowledged())
      if (a.member === old && a.at >= tFrozen - 1000) acknowledged.set(a.xid, `probe write at ${hhmmss(a.at)}`);
    // The lost rows are not on the leader (checked above by id); the probe's rows written through the old leader may be.
    const onLeader = await txidsOn(c, next, old);
    const problems = receiptProblems({
      receipts,
      acknowledgedOnMember: acknowledged,
      onLeader,
      clientRelations: await relationPaths(c, next, ['ha_writer', 'ha_probe', 'ha_rewind']),
      killedAtMs: tCrash,
    });
    console.log(
      `${old}'s receipts: ${JSON.stringify(receipts.map((r) => ({ at: r.at, action: r.action, ranges: r.ranges, counts: r.counts })))}`,
    );
    expect(receipts.length, 'one receipt, taken before the rewind').toBe(1);
    expect(receipts[0]!.action).toBe('rewind');
    expect(problems).toEqual([]);
    for (const xid of lostXids.keys())
      expect(receipts[0]!.transactions.find((t) => t.xid === xid)?.status, `lost row's xid ${xid}`).toBe('committed');
    expect(Object.values(receipts[0]!.relationNames ?? {}), 'relation names resolved on the leader').toContain('postgres.ha_rewind');
    const ha = (await c.get(old, '/ha')).json();
    expect(ha?.discarded).toMatchObject({ receipts: 1, committed: receipts[0]!.counts.committed });
    expect((await c.get(old, '/metrics')).body).toMatch(new RegExp(`^ha_discarded_receipts\\{[^}]*\\} 1$`, 'm'));
  });

  it(`the rewound node lost seconds later and started again streams again within ${REJOIN_BOUND_MS / 1000} s, without a second rewind`, async () => {
    const leader = await c.waitForLeader(10_000);
    const rewound = c.nodes
      .map((n) => n.name)
      .find(
        (n) =>
          n !== leader &&
          /pg_rewind from \S+ done/.test(
            c
              .logsMatching(/./, tStart)
              .filter((l) => l.includes(` ${n} `))
              .join('\n'),
          ),
      );
    expect(rewound, 'the node the first test rewound').toBeDefined();
    await c.waitForStreaming([rewound!], 30_000);
    const t0 = Date.now();
    await loseMember(c, rewound!);
    // The case: its last restartpoint on the old timeline, its WAL on the leader's (read as the
    // agent reads it, with the tool itself).
    const cd = await readControlData(pgBinDir(), c.node(rewound!).dataDir);
    const leaderTl = Number((await c.get(leader, '/ha')).json()?.timeline ?? 0);
    console.log(
      `${rewound} lost: '${cd.clusterState}', last checkpoint on timeline ${cd.checkpointTimeline}, minimum recovery point on timeline ${cd.minRecoveryTimeline}; the leader on ${leaderTl}`,
    );
    expect.soft(cd.checkpointTimeline, "the restartpoint still on the old timeline (the soak's case)").toBeLessThan(leaderTl);
    await c.psql(leader, `insert into ha_rewind values (${NEW.to + 100}, 'written while the rewound node was lost')`);
    const tRestart = Date.now();
    c.start(rewound!);
    await waitFor(
      async () => {
        if ((await c.get(rewound!, '/ha')).json()?.replication_state !== 'streaming') return false;
        return (await count(rewound!, { from: NEW.to + 100, to: NEW.to + 100 })) === 1;
      },
      REJOIN_BOUND_MS,
      `${rewound} streaming again with the new row`,
    ).catch((e) => {
      throw new Error(`${String(e)}\n${c.logsMatching(LOG_RE, t0).join('\n')}`);
    });
    const lines = c.logsMatching(/./, tRestart).filter((l) => l.includes(` ${rewound} `));
    console.log(`${rewound} lost at ${hhmmss(t0)}, streaming again ${Date.now() - tRestart} ms after its restart`);
    expect(
      lines.filter((l) => /diverged|running pg_rewind|single-user|reinitializ/.test(l)),
      `${rewound} is not judged diverged again`,
    ).toEqual([]);
    expect(probe!.twoPrimaries(tStart)).toEqual([]);
  });
});
