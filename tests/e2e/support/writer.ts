/**
 * Client-side evidence for the safety tests on a real cluster (TestCluster):
 * - a recorded writer: inserts rows with unique increasing ids on whichever member answers 200 on
 *   GET /primary and remembers every id whose INSERT was acknowledged (and by which member);
 * - a write probe: every ~100 ms tries a tiny write transaction on EVERY member at once and
 *   records the rounds in which two members acknowledged a write (two primaries);
 * - `assertNoLoss`: after the cluster settles, every acknowledged id is on the leader and on every
 *   replica.
 *
 * SQL goes through postgres.js over 127.0.0.1 (one connection per member and role, short connect
 * and statement timeouts, a client-side timeout on top), so neither loop spawns processes.
 */
import { dirname, join } from 'node:path';
import postgres from 'postgres';
import { sleep, waitFor } from '../../support/processes.ts';
import type { TestCluster } from './cluster.ts';

/** Table of the recorded writer: `id` unique and increasing, `member` the member written to. */
export const WRITER_TABLE = 'ha_writer';
/** Table of the write probe: one row per acknowledged probe write. */
export const PROBE_TABLE = 'ha_probe';
/** The current transaction's id as pg_waldump prints it (the low 32 bits of pg_current_xact_id()). */
export const TXID_SQL = '(pg_current_xact_id()::text::bigint % 4294967296)';

/**
 * Creates the writer's and the probe's tables on `leader` (idempotent) and waits until every
 * member in `members` (default: all) has them, i.e. streams from the leader.
 */
export async function createSafetyTables(cluster: TestCluster, leader: string, members?: string[], timeoutMs = 30_000): Promise<void> {
  await cluster.psql(
    leader,
    // `txid`: the writing transaction's id as pg_waldump prints it (32 bits), so the rows a
    // receipt of discarded transactions names can be told (tests/e2e/support/receipts.ts).
    `create table if not exists ${WRITER_TABLE} (id bigint primary key, member text not null, at timestamptz not null default clock_timestamp(), txid bigint not null default ${TXID_SQL});` +
      `create table if not exists ${PROBE_TABLE} (node text not null, at timestamptz not null default clock_timestamp(), txid bigint not null default ${TXID_SQL})`,
  );
  for (const m of members ?? cluster.nodes.map((n) => n.name)) {
    await waitFor(
      async () => (await cluster.psql(m, `select to_regclass('${PROBE_TABLE}') is not null`, 2000).catch(() => '')).trim() === 't',
      timeoutMs,
      `tables on ${m}`,
    );
  }
}

/** True for an error the server sent (SQLSTATE), false for connection problems and timeouts. */
function isServerError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { name?: string }).name === 'PostgresError';
}

/**
 * One lazily (re)opened connection to one member's PostgreSQL. A connection-level failure or a
 * client-side timeout drops it; the next query reconnects.
 */
class MemberConnection {
  private sql: postgres.Sql | undefined;

  constructor(
    private readonly port: number,
    private readonly label: string,
    private readonly timeoutMs: number,
    /** 127.0.0.1, another address, or a unix socket directory. */
    private readonly host = '127.0.0.1',
  ) {}

  /** Runs one statement (its own transaction); rejects after `timeoutMs` at the latest. */
  async query(text: string, params: (string | number)[] = []): Promise<Record<string, unknown>[]> {
    const sql = (this.sql ??= postgres({
      host: this.host,
      port: this.port,
      user: 'postgres',
      password: 'e2e-super',
      database: 'postgres',
      max: 1,
      connect_timeout: this.timeoutMs / 1000,
      idle_timeout: 0,
      max_lifetime: null,
      prepare: false,
      fetch_types: false,
      onnotice: () => undefined,
      connection: { application_name: this.label, statement_timeout: this.timeoutMs },
    }));
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<Record<string, unknown>[]>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
        sql.unsafe(text, params).then((rows) => resolve([...rows] as Record<string, unknown>[]), reject);
      });
    } catch (e) {
      if (!isServerError(e)) this.reset();
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops the connection without waiting. */
  reset(): void {
    const s = this.sql;
    this.sql = undefined;
    void s?.end({ timeout: 0 }).catch(() => undefined);
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    const s = this.sql;
    this.sql = undefined;
    await s?.end({ timeout: 0 }).catch(() => undefined);
  }
}

/** One acknowledged write of the recorded writer. */
export interface WriteRecord {
  id: number;
  /** The member whose PostgreSQL acknowledged the INSERT. */
  member: string;
  /** Epoch ms of the acknowledgement. */
  at: number;
  /** Its transaction id (32 bits, as pg_waldump and receipts print it). */
  xid: number;
}

/** The recorded writer (see `startWriter`). */
export interface RecordedWriter {
  /** The acknowledged writes so far (a copy). */
  records(): WriteRecord[];
  /** Counters: acknowledged, failed (error or timeout), per-member acknowledgements. */
  stats(): { acked: number; failed: number; byMember: Record<string, number>; lastError?: string };
  /** Stops the loop, closes its connections and returns every acknowledged write. */
  stop(): Promise<WriteRecord[]>;
}

/**
 * Starts the recorded writer. Every 20–50 ms it inserts the next id into `ha_writer` (created by
 * `createSafetyTables`) on its current target: the member that answered 200 on GET /primary at the
 * last discovery. The target is checked again on GET /primary at least every `recheckMs` (a load
 * balancer's health check) and re-discovered after any failed INSERT. Only INSERTs that returned
 * success are recorded; connect and statement timeouts are `timeoutMs`.
 */
export function startWriter(cluster: TestCluster, opts: { timeoutMs?: number; recheckMs?: number } = {}): RecordedWriter {
  const timeoutMs = opts.timeoutMs ?? 1000;
  const recheckMs = opts.recheckMs ?? 1000;
  const conns = new Map(
    cluster.nodes.map((n) => [n.name, new MemberConnection(n.pgPort, 'ha-e2e-writer', timeoutMs, n.host ?? '127.0.0.1')]),
  );
  const records: WriteRecord[] = [];
  const byMember: Record<string, number> = {};
  let failed = 0;
  let lastError: string | undefined;
  let running = true;
  let target: string | undefined;
  let checkedAt = 0;
  let nextId = 1;

  const discover = async (): Promise<string | undefined> => {
    if (target && (await cluster.get(target, '/primary')).status === 200) return target;
    const found = await cluster.primaries();
    return found[0];
  };

  const done = (async () => {
    while (running) {
      if (!target || Date.now() - checkedAt >= recheckMs) {
        target = await discover();
        checkedAt = Date.now();
        if (!target) {
          await sleep(100);
          continue;
        }
      }
      const member = target;
      const id = nextId++;
      try {
        const rows = await conns
          .get(member)!
          .query(`insert into ${WRITER_TABLE} (id, member) values ($1, $2) returning txid::text as xid`, [id, member]);
        records.push({ id, member, at: Date.now(), xid: Number(rows[0]?.['xid']) });
        byMember[member] = (byMember[member] ?? 0) + 1;
      } catch (e) {
        failed++;
        lastError = `${member}: ${String(e)}`;
        target = undefined;
      }
      await sleep(20 + ((id * 7) % 31));
    }
  })();

  return {
    records: () => records.slice(),
    stats: () => ({ acked: records.length, failed, byMember: { ...byMember }, ...(lastError ? { lastError } : {}) }),
    async stop() {
      running = false;
      await done;
      await Promise.all([...conns.values()].map((c) => c.close()));
      return records.slice();
    },
  };
}

/** A probe round in which more than one member acknowledged a write. */
export interface TwoPrimaries {
  /** Epoch ms when the round started (all members were asked at this instant). */
  at: number;
  /** The members that acknowledged, sorted. */
  members: string[];
  /** Per member: [sent, acknowledged] epoch ms of its write; the intervals overlap. */
  intervals: Record<string, [number, number]>;
}

/** The write probe (see `startWriteProbe`). */
export interface WriteProbe {
  /** Rounds in which two or more members acknowledged a write, optionally within [fromMs, toMs]. */
  twoPrimaries(fromMs?: number, toMs?: number): TwoPrimaries[];
  /** Each change of the set of writable members: `{at, members}` (the first round included). */
  transitions(): { at: number; members: string[] }[];
  /** Number of rounds run so far. */
  rounds(): number;
  /** Every acknowledged probe write: the member, its transaction id (32 bits), epoch ms of the acknowledgement. */
  acknowledged(): { member: string; xid: number; at: number }[];
  /** Stops the loop and closes its connections. */
  stop(): Promise<void>;
}

/**
 * Starts the write probe: every `intervalMs` (default 100) it runs, on EVERY member at the same
 * instant, `insert into ha_probe(node) values (<member>)` (a real table: only a writable primary
 * can acknowledge it; a replica refuses with "read-only transaction" at once). A round waits for
 * every member's answer (bounded by `timeoutMs`, default 1000). A round where two members
 * acknowledged with overlapping [sent, acknowledged] intervals is recorded as two primaries.
 */
export function startWriteProbe(
  cluster: TestCluster,
  opts: { intervalMs?: number; timeoutMs?: number; viaSocket?: boolean } = {},
): WriteProbe {
  const intervalMs = opts.intervalMs ?? 100;
  const timeoutMs = opts.timeoutMs ?? 1000;
  // viaSocket (network-namespace tests): each member's unix socket (the agent's default socket_dir,
  // `<dirname(data_dir)>/.<name>-sock`), a path no network fault cuts; else TCP to its host.
  const host = (n: (typeof cluster.nodes)[number]) =>
    opts.viaSocket ? join(dirname(n.dataDir), `.${n.name}-sock`) : (n.host ?? '127.0.0.1');
  const conns = new Map(cluster.nodes.map((n) => [n.name, new MemberConnection(n.pgPort, 'ha-e2e-probe', timeoutMs, host(n))]));
  const doubles: TwoPrimaries[] = [];
  const changes: { at: number; members: string[] }[] = [];
  const acks: { member: string; xid: number; at: number }[] = [];
  let count = 0;
  let running = true;
  let last = '';

  const done = (async () => {
    while (running) {
      const at = Date.now();
      const results = await Promise.all(
        [...conns.entries()].map(async ([member, conn]) => {
          const sent = Date.now();
          try {
            const rows = await conn.query(`insert into ${PROBE_TABLE} (node) values ($1) returning txid::text as xid`, [member]);
            acks.push({ member, xid: Number(rows[0]?.['xid']), at: Date.now() });
            return { member, interval: [sent, Date.now()] as [number, number] };
          } catch {
            return undefined;
          }
        }),
      );
      count++;
      const ok = results
        .filter((r): r is { member: string; interval: [number, number] } => r !== undefined)
        .sort((a, b) => a.member.localeCompare(b.member));
      const key = ok.map((r) => r.member).join(',');
      if (key !== last || changes.length === 0) {
        changes.push({ at, members: ok.map((r) => r.member) });
        last = key;
      }
      if (ok.length > 1) {
        const latestStart = Math.max(...ok.map((r) => r.interval[0]));
        const earliestEnd = Math.min(...ok.map((r) => r.interval[1]));
        if (latestStart <= earliestEnd) {
          doubles.push({ at, members: ok.map((r) => r.member), intervals: Object.fromEntries(ok.map((r) => [r.member, r.interval])) });
        }
      }
      const wait = at + intervalMs - Date.now();
      if (wait > 0) await sleep(wait);
    }
  })();

  return {
    twoPrimaries: (fromMs = 0, toMs = Number.MAX_SAFE_INTEGER) => doubles.filter((d) => d.at >= fromMs && d.at <= toMs),
    transitions: () => changes.slice(),
    rounds: () => count,
    acknowledged: () => acks.slice(),
    async stop() {
      running = false;
      await done;
      await Promise.all([...conns.values()].map((c) => c.close()));
    },
  };
}

/** Formats probe transitions from `fromMs` on (with the state at `fromMs`) for console output: `hh:mm:ss.mmm [node1,node2]`. */
export function formatTransitions(t: { at: number; members: string[] }[], fromMs = 0): string {
  const first = t.findIndex((x) => x.at >= fromMs);
  const shown = first < 0 ? t.slice(-1) : t.slice(Math.max(0, first - 1));
  return shown.map((x) => `${new Date(x.at).toISOString().slice(11, 23)} [${x.members.join(',')}]`).join('\n');
}

/** What `assertNoLoss` checked. */
export interface NoLossReport {
  leader: string;
  acknowledged: number;
  /** Members checked besides the leader, with how many rows each held at the end. */
  replicas: Record<string, number>;
}

async function idsOn(cluster: TestCluster, member: string): Promise<Set<number>> {
  const out = await cluster.psql(member, `select id from ${WRITER_TABLE}`, 5000);
  return new Set(
    out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number),
  );
}

function describeIds(ids: number[], records: WriteRecord[]): string {
  const byId = new Map(records.map((r) => [r.id, r]));
  return (
    ids
      .slice(0, 20)
      .map((id) => {
        const r = byId.get(id);
        return r ? `${id} (acknowledged by ${r.member} at ${new Date(r.at).toISOString().slice(11, 23)})` : String(id);
      })
      .join(', ') + (ids.length > 20 ? `, … (${ids.length} in all)` : '')
  );
}

/**
 * After the cluster settles: waits (bounded by `timeoutMs`, default 60 s) for exactly one member
 * answering 200 on GET /primary that is also the etcd leader, then checks that every acknowledged
 * id in `records` is on it, and waits (same bound) until each other member in `members`
 * (default: all) holds them all too. A member that holds ids the leader does not (read after the
 * member) has diverged: that fails as well. Throws an Error naming the lost ids, who acknowledged
 * them and when.
 */
export async function assertNoLoss(
  cluster: TestCluster,
  records: WriteRecord[],
  opts: { members?: string[]; timeoutMs?: number } = {},
): Promise<NoLossReport> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const leader = await waitFor(
    async () => {
      const [p, l] = await Promise.all([cluster.primaries(), cluster.leader()]);
      return p.length === 1 && p[0] === l ? l : undefined;
    },
    timeoutMs,
    'one primary that holds the leader key',
  );
  const acked = records.map((r) => r.id);
  const onLeader = await idsOn(cluster, leader);
  const lost = acked.filter((id) => !onLeader.has(id));
  if (lost.length > 0) {
    throw new Error(`${lost.length} of ${acked.length} acknowledged writes are not on the leader ${leader}: ${describeIds(lost, records)}`);
  }
  const replicas: Record<string, number> = {};
  for (const m of (opts.members ?? cluster.nodes.map((n) => n.name)).filter((x) => x !== leader)) {
    let missing: number[] = [];
    let extra: number[] = [];
    let count = 0;
    let lastErr = '';
    let read = false;
    for (;;) {
      try {
        const ids = await idsOn(cluster, m);
        read = true;
        const leaderNow = await idsOn(cluster, leader);
        count = ids.size;
        missing = acked.filter((id) => !ids.has(id));
        extra = [...ids].filter((id) => !leaderNow.has(id)).sort((a, b) => a - b);
        lastErr = '';
        if (missing.length === 0 && extra.length === 0) break;
        if (extra.length > 0) {
          throw new Error(`${m} holds ${extra.length} rows the leader ${leader} does not (diverged): ${describeIds(extra, records)}`);
        }
      } catch (e) {
        if (String(e).includes('diverged')) throw e;
        lastErr = String(e);
      }
      if (Date.now() > deadline) {
        if (!read)
          throw new Error(
            `${m} could not be read within ${timeoutMs} ms (${lastErr}): its ${acked.length} acknowledged writes are unverified`,
          );
        throw new Error(
          `${m} still lacks ${missing.length} of ${acked.length} acknowledged writes after ${timeoutMs} ms: ${describeIds(missing, records)}${lastErr ? ` (last error: ${lastErr})` : ''}`,
        );
      }
      await sleep(250);
    }
    replicas[m] = count;
  }
  return { leader, acknowledged: acked.length, replicas };
}

/**
 * A postgres.js client of `member` as the test superuser over TCP (its host, or 127.0.0.1): one
 * connection, 1 s connect timeout (benchmarks' direct writes). The caller ends it.
 */
export function superuserClient(cluster: TestCluster, member: string): ReturnType<typeof postgres> {
  return postgres({
    host: cluster.node(member).host ?? '127.0.0.1',
    port: cluster.node(member).pgPort,
    user: 'postgres',
    password: 'e2e-super',
    database: 'postgres',
    max: 1,
    connect_timeout: 1,
    idle_timeout: 5,
    onnotice: () => {},
  });
}

/**
 * The first `insert into <table> values (1)` acknowledged by any of `names` (benchmarks: the
 * instant a primary takes writes again), tried on each every 5 ms over TCP as the superuser.
 * `attemptMs` bounds one round of attempts (default: unbounded, so a commit waiting for a
 * synchronous standby is waited for). Resolves with the epoch ms of the acknowledgement and the
 * member. Throws when none was acknowledged within `timeoutMs`.
 */
export async function firstAcknowledgedWrite(
  cluster: TestCluster,
  names: string[],
  table: string,
  timeoutMs: number,
  attemptMs?: number,
): Promise<{ at: number; member: string }> {
  const clients = names.map((member) => ({ member, sql: superuserClient(cluster, member) }));
  const deadline = Date.now() + timeoutMs;
  const bounded = <T>(p: Promise<T>): Promise<T> =>
    attemptMs === undefined ? p : Promise.race([p, sleep(attemptMs).then(() => Promise.reject(new Error('attempt timed out')))]);
  try {
    for (;;) {
      const ok = await Promise.any(
        clients.map(async ({ member, sql }) => {
          await bounded(sql.unsafe(`insert into ${table} values (1)`));
          return { at: Date.now(), member };
        }),
      ).catch(() => undefined);
      if (ok) return ok;
      if (Date.now() > deadline) throw new Error(`no write into ${table} acknowledged within ${timeoutMs} ms`);
      await sleep(5);
    }
  } finally {
    await Promise.all(clients.map(({ sql }) => sql.end({ timeout: 1 }).catch(() => undefined)));
  }
}
