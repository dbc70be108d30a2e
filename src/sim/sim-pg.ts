/**
 * A simulated PostgreSQL (implements PgControl, src/postgres/types.ts) for the deterministic
 * simulation (docs/simulation.md "World model").
 *
 * The WAL is modelled by its *lineage*: a list of segments `{timeline, uid, start}`, each
 * covering [start, next segment's start), plus the end of the local WAL (`lsn`, bytes). The
 * timeline number is what PostgreSQL sees (history files, pg_controldata, the replication
 * protocol); the `uid` is the simulator's ground truth: two servers that both promote to
 * "timeline 2" get two different uids. PostgreSQL decides with numbers only (as the real one
 * does); the invariants judge with uids.
 *
 * Slow effects (initdb, start, stop, promote, base backup) complete on the simulated clock; quick
 * ones (probe, pg_controldata, configure, reload) resolve at once.
 */
import type { PgStatus, ReplicationRow } from '../domain/pg-status.ts';
import { formatLsn } from '../domain/lsn.ts';
import type { ConfigureOptions, ControlData, PgControl, Upstream, PromotionMarker, WalEnd } from '../postgres/types.ts';
import type { WalRecord } from '../domain/discarded.ts';
import { RewindNotStartedError } from '../postgres/rewind-error.ts';
import type { Prng } from './prng.ts';
import type { SimClock } from './sim-clock.ts';

/** One piece of a WAL lineage: from `start` up to the next segment's start. */
export interface Segment {
  timeline: number;
  /** Identity of this piece of history in the simulated world (unique per promotion/initdb). */
  uid: number;
  start: bigint;
}

/** The content of a data directory as far as the simulation cares. */
export interface WalData {
  sysid: string;
  segments: Segment[];
  /** End of the local WAL, bytes. */
  lsn: bigint;
  /** Starts of the checkpoint records in the WAL, ascending. */
  checkpoints: bigint[];
  /** The agent's promotion marker (a file of the data directory: copied by a base backup). */
  promotion?: PromotionMarker;
}

/** An acknowledged commit: where its record lies and in which piece of history. */
export interface Commit {
  id: number;
  node: string;
  uid: number;
  timeline: number;
  start: bigint;
  end: bigint;
  atMs: number;
}

/**
 * `synchronous_standby_names` as PostgreSQL reads it (docs 20.6.2; syncrep_gram.y):
 * `FIRST n (list)`, `n (list)` and a bare list (= `FIRST 1 (list)`) choose standbys by priority;
 * `ANY k (list)` by quorum; empty: no synchronous standby. Names are case-folded unless
 * double-quoted (`""` escapes a quote); `*` matches any standby. Undefined when the text does not
 * parse (PostgreSQL then keeps the value in force and logs the error).
 */
export interface SyncRule {
  method: 'none' | 'priority' | 'quorum';
  num: number;
  names: string[];
}

export function parseSyncStandbyNames(text: string): SyncRule | undefined {
  const t = text.trim();
  if (t === '') return { method: 'none', num: 0, names: [] };
  let rest = t;
  let method: SyncRule['method'] = 'priority';
  let num = 1;
  let listed = false;
  const head = /^(?:(ANY|FIRST)\s+)?(\d+)\s*\(/i.exec(rest);
  if (head) {
    method = head[1]?.toUpperCase() === 'ANY' ? 'quorum' : 'priority';
    num = Number(head[2]);
    rest = rest.slice(head[0].length);
    listed = true;
  } else if (/^(ANY|FIRST)\s*\(/i.test(rest) || /^(ANY|FIRST)\s+\d/i.test(rest)) {
    return undefined;
  }
  const names: string[] = [];
  for (;;) {
    rest = rest.trimStart();
    const quoted = /^"((?:[^"]|"")*)"/.exec(rest);
    const bare = quoted ? undefined : /^(\*|[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*|\d+)/.exec(rest);
    if (quoted) names.push(quoted[1]!.replace(/""/g, '"'));
    else if (bare) names.push(bare[1]!.toLowerCase());
    else return undefined;
    rest = rest.slice((quoted ?? bare)![0].length).trimStart();
    if (rest.startsWith(',')) {
      rest = rest.slice(1);
      continue;
    }
    break;
  }
  if (listed) {
    if (!rest.startsWith(')')) return undefined;
    rest = rest.slice(1).trim();
  }
  if (rest !== '' || num < 1) return undefined;
  return { method, num, names };
}

/** One standby streaming from a primary, as the primary's walsender sees it. */
export interface StandbyFlush {
  name: string;
  flushLsn: bigint;
}

/**
 * pg_stat_replication's sync_state and sync_priority of each standby (in the given order), and
 * the LSN up to which waiting commits are released (undefined: none), as PostgreSQL computes
 * them (syncrep.c): priority = position of the first list entry matching the application_name
 * (0: not listed: `async`). Priority method: the `num` listed standbys of best (lowest) priority
 * are `sync`, the other listed ones `potential`; commits are released up to the oldest flush
 * position of the `sync` ones, once there are `num` of them. Quorum: every listed standby is
 * `quorum`; commits are released up to the `num`-th highest flush position.
 */
export function syncStates(
  rule: SyncRule,
  standbys: readonly StandbyFlush[],
): { states: { state: 'sync' | 'potential' | 'quorum' | 'async'; priority: number }[]; releaseLsn: bigint | undefined } {
  const priorityOf = (name: string): number => {
    for (let i = 0; i < rule.names.length; i++) {
      const n = rule.names[i]!;
      if (n === '*' || n === name) return rule.method === 'quorum' ? 1 : i + 1;
    }
    return 0;
  };
  const prio = standbys.map((s) => (rule.method === 'none' ? 0 : priorityOf(s.name)));
  const listed = standbys.map((_, i) => i).filter((i) => prio[i]! > 0);
  const states = standbys.map((_, i) => ({ state: 'async' as 'sync' | 'potential' | 'quorum' | 'async', priority: prio[i]! }));
  if (rule.method === 'none') return { states, releaseLsn: undefined };
  if (rule.method === 'quorum') {
    for (const i of listed) states[i]!.state = 'quorum';
    if (listed.length < rule.num) return { states, releaseLsn: undefined };
    const flushes = listed.map((i) => standbys[i]!.flushLsn).sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
    return { states, releaseLsn: flushes[rule.num - 1] };
  }
  const byPriority = [...listed].sort((a, b) => prio[a]! - prio[b]! || a - b);
  const chosen = byPriority.slice(0, rule.num);
  for (const i of listed) states[i]!.state = chosen.includes(i) ? 'sync' : 'potential';
  if (chosen.length < rule.num) return { states, releaseLsn: undefined };
  let min = standbys[chosen[0]!]!.flushLsn;
  for (const i of chosen) if (standbys[i]!.flushLsn < min) min = standbys[i]!.flushLsn;
  return { states, releaseLsn: min };
}

/** What a SimPg needs from its world. */
export interface SimPgWorld {
  clock: SimClock;
  rng: Prng;
  nextUid(): number;
  nextSysid(): string;
  nextCommitId(): number;
  /** The SimPg of a member. */
  peer(name: string): SimPg | undefined;
  /** Replication and base backup connections from `from` to `to` get through. */
  canConnect(from: string, to: string): boolean;
  /** The running replicas streaming from `pg` now (its walsenders), connected to it. */
  standbysOf(pg: SimPg): SimPg[];
  /** A running/role/writable change (the single-writer invariant checks at once). */
  changed(pg: SimPg): void;
  /**
   * A primary's fast shutdown: its walsenders send every standby streaming from it the WAL up to
   * the shutdown checkpoint before the postmaster exits (what makes a switchover lose nothing).
   */
  flushStandbys(pg: SimPg): void;
  /** Just before a change that may end a writable period (stop, crash): the invariants judge the state that ends. */
  changing?(pg: SimPg): void;
  /** A promotion completes at WAL end `lsn` (before its new timeline and checkpoint): the promotion-lag invariant. */
  promoting?(pg: SimPg, lsn: bigint): void;
  /** Every commit written so far, on any member (what pg_waldump finds in a data directory's WAL: readWalRange). */
  commits?(): readonly Commit[];
  /**
   * The data directory `old` was thrown away for `replacement`: rewound onto it, or removed and
   * replaced by a base backup (called when the copy lands). The discarded-receipt invariant.
   */
  discarding?(pg: SimPg, old: WalData, replacement: WalData): void;
}

/** Deliberately broken behaviours, to check that the simulator catches them (tests). */
export interface SimPgBugs {
  /** A primary still accepts writes after its stop (as if backends were never terminated). */
  writableAfterStop?: boolean;
  /**
   * Per member: bytes added to the WAL positions this PostgreSQL reports as a replica (probe:
   * received/replayed LSN), so that its agent (and its peers, through its status document) see it
   * more advanced than it is. Planted bug "promoting a lagging member".
   */
  inflateReplicaWal?: Record<string, number>;
  /**
   * The promotion marker (ha.promotion.json) is never found: readPromotion answers nothing.
   * Planted bug "following a diverged leader" (two "timeline 2"s made by two promotions at one
   * switch point: only the marker tells them apart).
   */
  losePromotionMarker?: boolean;
}

/** Size of a checkpoint record, bytes. */
export const CHECKPOINT_BYTES = 112n;
/** Where initdb's WAL starts. */
const INITIAL_LSN = 0x1000000n;

/** The uid of the segment that holds byte `p` (the last one starting at or before it). */
export function uidAt(segments: Segment[], p: bigint): number {
  let uid = segments[0]!.uid;
  for (const s of segments) {
    if (s.start <= p) uid = s.uid;
    else break;
  }
  return uid;
}

/** The timeline of the segment that holds byte `p`. */
function timelineAt(segments: Segment[], p: bigint): number {
  let tl = segments[0]!.timeline;
  for (const s of segments) {
    if (s.start <= p) tl = s.timeline;
    else break;
  }
  return tl;
}

/**
 * Where the local WAL `a` (its content [0, a.lsn)) disagrees with the lineage `b` (which extends
 * its last segment forever): the first such byte, or undefined when `a` is a prefix of `b`'s
 * history. Ground truth (uids), not timeline numbers.
 */
export function divergencePoint(a: WalData, b: WalData): bigint | undefined {
  if (a.sysid !== b.sysid) return 0n;
  const points = new Set<bigint>([0n]);
  for (const s of a.segments) if (s.start < a.lsn) points.add(s.start);
  for (const s of b.segments) if (s.start < a.lsn) points.add(s.start);
  const sorted = [...points].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  for (const p of sorted) if (uidAt(a.segments, p) !== uidAt(b.segments, p)) return p;
  return undefined;
}

/** True when `data` holds the commit (same piece of history, WAL long enough). */
export function holdsCommit(data: WalData | undefined, c: Commit): boolean {
  if (!data || data.lsn < c.end) return false;
  return uidAt(data.segments, c.start) === c.uid && uidAt(data.segments, c.end - 1n) === c.uid;
}

function copyData(d: WalData): WalData {
  return {
    sysid: d.sysid,
    segments: d.segments.map((s) => ({ ...s })),
    lsn: d.lsn,
    checkpoints: [...d.checkpoints],
    ...(d.promotion ? { promotion: { ...d.promotion } } : {}),
  };
}

function pgTimeText(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '+00');
}

type RunState = 'stopped' | 'starting' | 'running' | 'stopping';

export class SimPg implements PgControl {
  readonly dataDir: string;
  data: WalData | undefined;
  clusterState = '';
  minRecoveryLsn = 0n;
  run: RunState = 'stopped';
  role: 'primary' | 'replica' = 'primary';
  configured: ConfigureOptions | undefined;
  /** primary_conninfo in effect (set at start and reload). */
  activeUpstream: Upstream | undefined;
  streaming = false;
  /** Bumped whenever the data directory is replaced (initdb, base backup, removal). */
  dataGen = 0;
  private epoch = 0;
  private pid: number | undefined;
  private startedAtMs = 0;
  /** When the postmaster now starting up was started (its stand-in postmaster.pid, `dataDirPostmaster`). */
  private startingSinceMs = 0;
  private slots: string[] = [];
  private ghostWritable = false;
  /** Inside a fast shutdown, while the walsenders send the last WAL. */
  private shuttingDown = false;
  /** `synchronous_standby_names` in force (applied at start and reload) and how it reads. */
  syncNames = '';
  private syncRule: SyncRule = { method: 'none', num: 0, names: [] };
  /** Commits written on this primary, waiting for their synchronous standbys (in LSN order). */
  waiting: Commit[] = [];
  /** The data directory removed last and not replaced by a base backup yet (discarded-receipt is judged at the copy). */
  private removed: WalData | undefined;
  /** Counters (figures). */
  crashes = 0;
  /** pg_rewind runs that rewrote the data directory. */
  rewinds = 0;

  constructor(
    readonly name: string,
    private readonly world: SimPgWorld,
    private readonly bugs: SimPgBugs = {},
  ) {
    this.dataDir = `/sim/${name}/data`;
  }

  // ---- state the world and the invariants read ------------------------------------------------

  /** A running primary that accepts writes now. */
  acceptsWrites(): boolean {
    if (this.ghostWritable) return true;
    return this.run === 'running' && this.role === 'primary' && this.data !== undefined;
  }

  /** The current timeline (of the last segment), 0 without data. */
  get timeline(): number {
    return this.data ? this.data.segments[this.data.segments.length - 1]!.timeline : 0;
  }

  /**
   * Appends a commit of `bytes` on a primary that accepts writes; undefined when refused. The
   * commit waits (`waiting`) until `release()` acknowledges it: at once without synchronous
   * standby, else once its synchronous standbys flushed it.
   */
  write(bytes: number): Commit | undefined {
    if (!this.acceptsWrites() || !this.data) return undefined;
    const d = this.data;
    const start = d.lsn;
    d.lsn += BigInt(bytes);
    const last = d.segments[d.segments.length - 1]!;
    const c: Commit = {
      id: this.world.nextCommitId(),
      node: this.name,
      uid: last.uid,
      timeline: last.timeline,
      start,
      end: d.lsn,
      atMs: this.world.clock.now(),
    };
    this.waiting.push(c);
    return c;
  }

  /**
   * The waiting commits PostgreSQL acknowledges now (removed from `waiting`): every one when
   * synchronous_standby_names is empty, else those at or below the release LSN of syncStates()
   * (the standbys' flush positions). Only a running primary acknowledges.
   */
  release(): Commit[] {
    if (this.waiting.length === 0) return [];
    if (!this.ghostWritable && (this.run !== 'running' || this.role !== 'primary')) return [];
    let upTo: bigint | undefined;
    if (this.syncRule.method === 'none' || this.ghostWritable) upTo = undefined;
    else {
      upTo = syncStates(this.syncRule, this.standbyFlushes()).releaseLsn;
      if (upTo === undefined) return [];
    }
    let n = 0;
    while (n < this.waiting.length && (upTo === undefined || this.waiting[n]!.end <= upTo)) n++;
    if (n === 0) return [];
    return this.waiting.splice(0, n);
  }

  /**
   * A primary that accepts writes and would acknowledge a commit once its standbys flushed it:
   * no synchronous standby asked for, or enough of the listed ones stream from it now. A primary
   * whose commits can only wait (the strict placeholder, its synchronous standbys gone) does not
   * acknowledge.
   */
  acknowledges(): boolean {
    if (!this.acceptsWrites()) return false;
    if (this.ghostWritable || this.syncRule.method === 'none') return true;
    return syncStates(this.syncRule, this.standbyFlushes()).releaseLsn !== undefined;
  }

  private standbyFlushes(): StandbyFlush[] {
    return this.world.standbysOf(this).map((p) => ({ name: p.name, flushLsn: p.data?.lsn ?? 0n }));
  }

  /** A postmaster goes away: the backends waiting for their synchronous standbys get an error, never an acknowledgement. */
  private dropWaiting(): void {
    if (this.waiting.length) this.waiting = [];
  }

  /** synchronous_standby_names of the configuration files, applied (start, reload); a value that does not parse keeps the one in force. */
  private applySyncNames(): void {
    const raw = this.configured?.parameters?.['synchronous_standby_names'];
    const text = raw === undefined ? '' : String(raw);
    if (text === this.syncNames) return;
    const rule = parseSyncStandbyNames(text);
    if (!rule) return;
    this.syncNames = text;
    this.syncRule = rule;
  }

  /** The postmaster dies (SIGKILL): no shutdown checkpoint, the control file says what it said. */
  crash(): void {
    if (this.run === 'stopped') return;
    this.world.changing?.(this);
    this.crashes++;
    this.epoch++;
    this.dropWaiting();
    this.run = 'stopped';
    this.streaming = false;
    this.pid = undefined;
    this.world.changed(this);
  }

  /**
   * One step of WAL shipping for a running replica: copies the upstream's WAL when PostgreSQL
   * would stream from it (running, reachable, same system, and by the timeline numbers and
   * history files: same timeline and not ahead of it, or a newer timeline that forked at or
   * after the local WAL end). Returns the upstream it streamed from, or undefined.
   */
  ship(): SimPg | undefined {
    const d = this.data;
    const up = this.activeUpstream;
    if (this.run !== 'running' || this.role !== 'replica' || !d || !up) return this.setStreaming(false);
    const src = this.world.peer(up.name);
    const s = src?.data;
    if (!src || !s || (src.run !== 'running' && !src.shuttingDown) || !this.world.canConnect(this.name, src.name) || s.sysid !== d.sysid)
      return this.setStreaming(false);
    const tA = this.timeline;
    const tB = src.timeline;
    if (tA > tB) return this.setStreaming(false);
    if (tA === tB) {
      if (d.lsn > s.lsn) return this.setStreaming(false);
    } else {
      // The upstream's history must contain our timeline, forking off at or after our WAL end.
      let idx = -1;
      for (let i = 0; i < s.segments.length; i++) if (s.segments[i]!.timeline === tA) idx = i;
      const next = idx >= 0 ? s.segments[idx + 1] : undefined;
      if (!next || next.start < d.lsn) return this.setStreaming(false);
    }
    this.setStreaming(true);
    // Streaming copies WAL, not files: the local promotion marker stays as it was.
    this.data = {
      sysid: s.sysid,
      segments: s.segments.map((x) => ({ ...x })),
      lsn: s.lsn,
      checkpoints: [...s.checkpoints],
      ...(d.promotion ? { promotion: d.promotion } : {}),
    };
    this.minRecoveryLsn = s.lsn;
    return src;
  }

  // ---- PgControl -------------------------------------------------------------------------------

  async hasData(): Promise<boolean> {
    return this.data !== undefined;
  }

  async controlData(): Promise<ControlData> {
    const d = this.data;
    if (!d) throw new Error(`${this.dataDir}: no cluster`);
    let ckpt = d.checkpoints[0] ?? 0n;
    for (const c of d.checkpoints) if (c + CHECKPOINT_BYTES <= d.lsn) ckpt = c;
    return {
      systemIdentifier: d.sysid,
      clusterState: this.clusterState,
      checkpointLsn: ckpt,
      checkpointTimeline: timelineAt(d.segments, ckpt),
      redoLsn: ckpt,
      minRecoveryLsn: this.clusterState.includes('recovery') ? this.minRecoveryLsn : 0n,
      // Simulated clusters run with wal_log_hints = on (the agent's default): pg_rewind can work on them.
      walLogHints: true,
      dataChecksumVersion: 0,
    };
  }

  async initdb(): Promise<void> {
    if (this.data) throw new Error('initdb: directory not empty');
    await this.after(500, 1000);
    if (this.data) throw new Error('initdb: directory not empty');
    this.data = {
      sysid: this.world.nextSysid(),
      segments: [{ timeline: 1, uid: this.world.nextUid(), start: 0n }],
      lsn: INITIAL_LSN + CHECKPOINT_BYTES,
      checkpoints: [INITIAL_LSN],
    };
    this.clusterState = 'shut down';
    this.minRecoveryLsn = 0n;
    this.dataGen++;
  }

  async postBootstrap(): Promise<void> {}

  async customBootstrap(): Promise<void> {
    throw new Error('custom bootstrap is not simulated');
  }

  async configure(opts: ConfigureOptions): Promise<void> {
    this.configured = opts;
  }

  async start(_timeoutMs?: number, opts?: { beforeLaunch?: () => void }): Promise<void> {
    if (!this.data) throw new Error('start: no cluster in the data directory');
    // A postmaster of this data directory already runs or is starting (its agent was restarted
    // meanwhile): LocalPostgres.start launches nothing and only waits until it answers.
    if (this.run === 'running') return;
    if (this.run === 'starting') {
      while (this.run === 'starting') await this.after(20, 20);
      if ((this.run as RunState) === 'running') return;
      throw new Error('start: the server exited during start-up');
    }
    if (this.run !== 'stopped') throw new Error('start: another server might be running');
    opts?.beforeLaunch?.();
    const epoch = ++this.epoch;
    this.run = 'starting';
    this.startingSinceMs = this.world.clock.now();
    this.world.changed(this);
    await this.after(200, 600);
    if (epoch !== this.epoch || this.run !== 'starting' || !this.data) throw new Error('start: the server exited during start-up');
    const role = this.configured?.role ?? 'primary';
    this.role = role;
    this.activeUpstream = role === 'replica' ? this.configured?.upstream : undefined;
    this.ghostWritable = false;
    this.dropWaiting();
    this.syncNames = '';
    this.syncRule = { method: 'none', num: 0, names: [] };
    this.applySyncNames();
    if (role === 'primary') {
      // Crash recovery (or recovery of a former replica's data) ends with a checkpoint.
      if (this.clusterState !== 'shut down') this.appendCheckpoint();
      this.clusterState = 'in production';
    } else {
      this.clusterState = 'in archive recovery';
      this.minRecoveryLsn = this.data.lsn;
    }
    this.pid = 1000 + this.world.rng.int(0, 30000);
    this.startedAtMs = this.world.clock.now();
    this.run = 'running';
    this.world.changed(this);
  }

  async stop(mode: 'fast' | 'immediate'): Promise<void> {
    if (this.run === 'stopped') {
      await this.after(10, 20);
      return;
    }
    const epoch = ++this.epoch;
    const wasRunning = this.run === 'running';
    const wasPrimary = this.role === 'primary';
    this.world.changing?.(this);
    if (this.bugs.writableAfterStop && wasRunning && wasPrimary) this.ghostWritable = true;
    // Backends are terminated first: a commit waiting for a synchronous standby is never acknowledged.
    this.dropWaiting();
    this.run = 'stopping';
    this.streaming = false;
    this.world.changed(this);
    await this.after(100, 300);
    if (epoch !== this.epoch) return;
    if (mode === 'fast' && wasRunning && this.data) {
      if (wasPrimary) {
        this.appendCheckpoint();
        this.clusterState = 'shut down';
        this.shuttingDown = true;
        this.world.flushStandbys(this);
        this.shuttingDown = false;
      } else {
        this.clusterState = 'shut down in recovery';
        this.minRecoveryLsn = this.data.lsn;
      }
    }
    this.run = 'stopped';
    this.pid = undefined;
    this.world.changed(this);
  }

  async promote(): Promise<void> {
    if (this.run !== 'running') throw new Error('promote: server is not running');
    if (this.role === 'primary') return;
    const epoch = this.epoch;
    await this.after(100, 300);
    if (epoch !== this.epoch || this.run !== 'running' || !this.data) throw new Error('promote: server is not running');
    if ((this.role as string) === 'primary') return;
    const d = this.data;
    this.world.promoting?.(this, d.lsn);
    // The new timeline: the highest one this data directory knows of, plus one.
    const newest = Math.max(...d.segments.map((s) => s.timeline));
    d.segments.push({ timeline: newest + 1, uid: this.world.nextUid(), start: d.lsn });
    this.appendCheckpoint();
    this.role = 'primary';
    this.clusterState = 'in production';
    this.activeUpstream = undefined;
    this.streaming = false;
    this.world.changed(this);
  }

  async reload(): Promise<void> {
    if (this.run !== 'running') return;
    if (this.role === 'replica') this.activeUpstream = this.configured?.role === 'replica' ? this.configured.upstream : undefined;
    this.applySyncNames();
  }

  async basebackup(from: Upstream): Promise<void> {
    if (this.run !== 'stopped') throw new Error('pg_basebackup: a postmaster runs on this data directory');
    if (this.data) throw new Error('pg_basebackup: directory not empty');
    const reachable = () => {
      const src = this.world.peer(from.name);
      return src && src.data && src.run === 'running' && this.world.canConnect(this.name, from.name) ? src : undefined;
    };
    if (!reachable()) {
      await this.after(50, 100);
      throw new Error(`pg_basebackup: could not connect to ${from.name}`);
    }
    await this.after(1000, 2500);
    const src = reachable();
    if (!src || !src.data) throw new Error(`pg_basebackup: connection to ${from.name} lost`);
    if (this.data || this.run !== 'stopped') throw new Error('pg_basebackup: directory not empty');
    if (src.role === 'primary' && src.acceptsWrites()) src.appendCheckpoint();
    this.data = copyData(src.data);
    if (this.removed) {
      this.world.discarding?.(this, this.removed, this.data);
      this.removed = undefined;
    }
    this.clusterState = 'in archive recovery';
    this.minRecoveryLsn = this.data.lsn;
    this.dataGen++;
  }

  /**
   * pg_rewind from `from`, decided as the real tool decides, with timeline numbers and switch
   * points only (the history files), never with uids:
   * - the target must be stopped and hold a cluster; the source must run, be reachable and belong
   *   to the same system;
   * - a target not shut down cleanly first goes through single-user crash recovery (ends with a
   *   checkpoint at the end of its WAL: `shut down`);
   * - the last common timeline: the longest common prefix of both histories (same timeline
   *   number, same start); none → fails. The fork point is the earlier of the two ends of that
   *   timeline. Same current timeline on both sides → nothing to do ("no rewind required"), as
   *   when the target's WAL ends at or before the fork point;
   * - otherwise the WAL past the fork point is dropped and the data directory takes the source's
   *   files: its history up to its current WAL end (its promotion marker included), to be
   *   replayed in archive recovery; counted as a new data directory (dataGen) like a base backup.
   * Takes 0.3–1 s (0.1–0.3 s more for crash recovery).
   */
  async rewind(from: Upstream): Promise<void> {
    if (this.run !== 'stopped') throw new RewindNotStartedError('pg_rewind: a postmaster runs on the target data directory');
    if (!this.data) throw new Error('pg_rewind: no cluster in the target data directory');
    const gen = this.dataGen;
    const reachable = () => {
      const src = this.world.peer(from.name);
      return src && src.data && src.run === 'running' && this.world.canConnect(this.name, from.name) ? src : undefined;
    };
    const untouched = () => this.run === 'stopped' && this.data !== undefined && this.dataGen === gen;
    if (!reachable()) {
      await this.after(50, 100);
      throw new RewindNotStartedError(`pg_rewind: could not connect to ${from.name}`);
    }
    if (this.clusterState !== 'shut down' && this.clusterState !== 'shut down in recovery') {
      await this.after(100, 300);
      if (!untouched()) throw new Error('pg_rewind: the target data directory changed during crash recovery');
      this.appendCheckpoint();
      this.clusterState = 'shut down';
      this.minRecoveryLsn = 0n;
    }
    await this.after(300, 1000);
    const src = reachable();
    if (!src || !src.data) throw new Error(`pg_rewind: connection to ${from.name} lost`);
    if (!untouched() || !this.data) throw new Error('pg_rewind: the target data directory changed during the rewind');
    const t = this.data;
    const s = src.data;
    if (t.sysid !== s.sysid) throw new Error('pg_rewind: source and target clusters are from different systems');
    if (this.timeline === src.timeline) return; // "source and target cluster are on the same timeline": no rewind required
    let common = -1;
    for (let i = 0; i < Math.min(t.segments.length, s.segments.length); i++) {
      if (t.segments[i]!.timeline !== s.segments[i]!.timeline || t.segments[i]!.start !== s.segments[i]!.start) break;
      common = i;
    }
    if (common < 0) throw new Error("pg_rewind: could not find common ancestor of the source and target cluster's timelines");
    const endOf = (d: WalData, i: number) => d.segments[i + 1]?.start ?? d.lsn;
    const fork = endOf(t, common) < endOf(s, common) ? endOf(t, common) : endOf(s, common);
    if (t.lsn <= fork) return; // "no rewind required"
    if (src.role === 'primary' && src.acceptsWrites()) src.appendCheckpoint();
    const rewound = copyData(s);
    // Ground truth: where the target's WAL really left the source's history. When pg_rewind's fork
    // (by numbers) lies later, it trusted a timeline that only looks common (same number, same
    // switch point, another promotion): what the target wrote before that fork is not undone.
    const truth = divergencePoint(t, s);
    if (truth !== undefined && truth < fork) {
      rewound.segments = [
        ...t.segments.filter((x) => x.start < fork).map((x) => ({ ...x })),
        { timeline: timelineAt(s.segments, fork), uid: uidAt(s.segments, fork), start: fork },
        ...s.segments.filter((x) => x.start > fork).map((x) => ({ ...x })),
      ];
    }
    this.world.discarding?.(this, t, rewound);
    this.data = rewound;
    this.clusterState = 'in archive recovery';
    this.minRecoveryLsn = this.data.lsn;
    this.configured = undefined;
    this.dataGen++;
    this.rewinds++;
  }

  /**
   * Where the local WAL ends, exactly (the model has no torn records): the timeline of its last
   * segment and its end. Refused while a postmaster runs, as LocalPostgres refuses.
   */
  async walEnd(): Promise<WalEnd> {
    const d = this.data;
    if (!d) throw new Error(`${this.dataDir}: no cluster`);
    if (this.run !== 'stopped') throw new Error('not reading where the WAL ends: a postmaster runs');
    const ckpt = d.checkpoints[d.checkpoints.length - 1] ?? 0n;
    return { timeline: this.timeline, lastRecordLsn: ckpt + CHECKPOINT_BYTES === d.lsn ? ckpt : d.lsn - 1n, endLsn: d.lsn };
  }

  /**
   * The records of the local WAL of `timeline` in [fromLsn, toLsn), as pg_waldump would list them:
   * one COMMIT record per commit written into this piece of history (by uid: the world's commits
   * whose record starts in the range on the local lineage), and each checkpoint record.
   */
  async readWalRange(timeline: number, fromLsn: bigint, toLsn: bigint | undefined, onRecord: (r: WalRecord) => void): Promise<void> {
    const d = this.data;
    if (!d) throw new Error(`${this.dataDir}: no cluster`);
    const end = toLsn !== undefined && toLsn < d.lsn ? toLsn : d.lsn;
    const inRange = (p: bigint) => p >= fromLsn && p < end && timelineAt(d.segments, p) === timeline;
    const records: WalRecord[] = [];
    for (const c of this.world.commits?.() ?? []) {
      if (!inRange(c.start) || uidAt(d.segments, c.start) !== c.uid) continue;
      records.push({
        rmgr: 'Heap',
        totalBytes: Number(c.end - c.start) - 34,
        xid: c.id,
        lsn: c.start,
        description: 'INSERT off 1 flags 0x00, blkref #0: rel 1663/5/16384 blk 0',
      });
      records.push({
        rmgr: 'Transaction',
        totalBytes: 34,
        xid: c.id,
        lsn: c.end - 34n,
        description: `COMMIT ${pgTimeText(c.atMs).replace('+00', '')} UTC`,
      });
    }
    for (const k of d.checkpoints)
      if (inRange(k))
        records.push({ rmgr: 'XLOG', totalBytes: Number(CHECKPOINT_BYTES), xid: 0, lsn: k, description: 'CHECKPOINT_SHUTDOWN' });
    records.sort((a, b) => (a.lsn < b.lsn ? -1 : a.lsn > b.lsn ? 1 : 0));
    for (const r of records) onRecord(r);
  }

  async removeData(): Promise<void> {
    if (this.run !== 'stopped') throw new Error('refusing to remove the data directory of a running server');
    // Judged when the re-clone's base backup lands (its source's lineage is what the member takes).
    if (this.data) this.removed = this.data;
    this.data = undefined;
    this.clusterState = '';
    this.minRecoveryLsn = 0n;
    this.configured = undefined;
    this.dataGen++;
  }

  /** The postmaster's PID and start instant now, synchronously (the simulated fence's /proc). */
  get postmaster(): { pid: number; startedAtMs: number } | undefined {
    return this.pid === undefined ? undefined : { pid: this.pid, startedAtMs: this.startedAtMs };
  }

  /**
   * The postmaster of this data directory now, as its postmaster.pid shows it (the simulated
   * fence armed on the data directory, finding 16): the running one, or one still starting up (a
   * real postmaster writes postmaster.pid first thing; here it has a stand-in PID until it runs).
   */
  get dataDirPostmaster(): { pid: number; startedAtMs: number } | undefined {
    if (this.pid !== undefined) return { pid: this.pid, startedAtMs: this.startedAtMs };
    if (this.run === 'starting') return { pid: 60_000 + (this.epoch % 10_000), startedAtMs: this.startingSinceMs };
    return undefined;
  }

  async postmasterPid(): Promise<number | undefined> {
    return this.pid;
  }

  async ensureNoPostmaster(): Promise<void> {
    if (this.run !== 'stopped') await this.stop('immediate');
  }

  async probe(): Promise<PgStatus> {
    const d = this.data;
    if (this.run !== 'running' || !d) throw new Error('connection refused');
    const base = {
      atMs: this.world.clock.now(),
      serverVersion: 150010,
      postmasterStartTime: pgTimeText(this.startedAtMs),
      timeline: this.timeline,
      pendingRestart: {},
    };
    if (this.role === 'primary') {
      const flushes = this.standbyFlushes();
      const { states } = syncStates(this.syncRule, flushes);
      const replication: ReplicationRow[] = flushes.map((f, i) => ({
        usename: 'replicator',
        application_name: f.name,
        client_addr: null,
        state: 'streaming',
        sync_state: states[i]!.state,
        sync_priority: states[i]!.priority,
        flush_lsn: f.flushLsn,
        replay_lsn: f.flushLsn,
      }));
      const slots: Record<string, bigint> = {};
      for (const s of this.slots) slots[s] = 0n;
      return { ...base, inRecovery: false, flushLsn: d.lsn, synchronousStandbyNames: this.syncNames, streaming: false, replication, slots };
    }
    const reported = d.lsn + BigInt(this.bugs.inflateReplicaWal?.[this.name] ?? 0);
    return {
      ...base,
      inRecovery: true,
      receiveLsn: reported,
      replayLsn: reported,
      latestEndLsn: reported,
      replayTimestamp: null,
      replayPaused: false,
      streaming: this.streaming,
      archiveRecovery: false,
      ...(this.streaming && this.activeUpstream ? { upstreamHost: this.activeUpstream.host } : {}),
      replication: [],
      slots: {},
    };
  }

  async syncSlots(names: string[]): Promise<void> {
    this.slots = [...names];
  }

  async query<T = Record<string, unknown>>(): Promise<T[]> {
    if (this.run !== 'running') throw new Error('connection refused');
    return [];
  }

  async close(): Promise<void> {}

  async readPromotion(): Promise<PromotionMarker | undefined> {
    if (this.bugs.losePromotionMarker) return undefined;
    return this.data?.promotion ? { ...this.data.promotion } : undefined;
  }

  async writePromotion(marker: PromotionMarker): Promise<void> {
    if (this.data) this.data.promotion = { ...marker };
  }

  async removePromotion(): Promise<void> {
    if (this.data) delete this.data.promotion;
  }

  async hasStandbySignal(): Promise<boolean> {
    return this.configured?.role === 'replica';
  }

  async readTimelineHistory(timeline: number): Promise<string> {
    const d = this.data;
    let idx = -1;
    if (d) for (let i = 0; i < d.segments.length; i++) if (d.segments[i]!.timeline === timeline) idx = i;
    if (!d || idx <= 0) throw new Error(`pg_wal/${String(timeline).padStart(8, '0')}.history: no such file`);
    const lines: string[] = [];
    for (let i = 0; i < idx; i++)
      lines.push(`${d.segments[i]!.timeline}\t${formatLsn(d.segments[i + 1]!.start)}\tno recovery target specified`);
    return lines.join('\n') + '\n';
  }

  // ---- internals -------------------------------------------------------------------------------

  private setStreaming(on: boolean): undefined {
    this.streaming = on;
    return undefined;
  }

  private appendCheckpoint(): void {
    const d = this.data;
    if (!d) return;
    d.checkpoints.push(d.lsn);
    d.lsn += CHECKPOINT_BYTES;
  }

  /** Resolves after a random duration in [loMs, hiMs] of simulated time. */
  private after(loMs: number, hiMs: number): Promise<void> {
    const ms = this.world.rng.int(loMs, hiMs);
    return new Promise((resolve) => this.world.clock.schedule(ms, resolve));
  }
}
