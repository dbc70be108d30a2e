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
import type { ConfigureOptions, ControlData, PgControl, Upstream, PromotionMarker } from '../postgres/types.ts';
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
  return { sysid: d.sysid, segments: d.segments.map((s) => ({ ...s })), lsn: d.lsn, checkpoints: [...d.checkpoints], ...(d.promotion ? { promotion: { ...d.promotion } } : {}) };
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
  private slots: string[] = [];
  private ghostWritable = false;
  /** Inside a fast shutdown, while the walsenders send the last WAL. */
  private shuttingDown = false;
  /** Counters (figures). */
  crashes = 0;

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

  /** Appends a commit of `bytes` on a primary that accepts writes; undefined when refused. */
  write(bytes: number): Commit | undefined {
    if (!this.acceptsWrites() || !this.data) return undefined;
    const d = this.data;
    const start = d.lsn;
    d.lsn += BigInt(bytes);
    const last = d.segments[d.segments.length - 1]!;
    return { id: this.world.nextCommitId(), node: this.name, uid: last.uid, timeline: last.timeline, start, end: d.lsn, atMs: this.world.clock.now() };
  }

  /** The postmaster dies (SIGKILL): no shutdown checkpoint, the control file says what it said. */
  crash(): void {
    if (this.run === 'stopped') return;
    this.world.changing?.(this);
    this.crashes++;
    this.epoch++;
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
    if (!src || !s || (src.run !== 'running' && !src.shuttingDown) || !this.world.canConnect(this.name, src.name) || s.sysid !== d.sysid) return this.setStreaming(false);
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
    this.data = { sysid: s.sysid, segments: s.segments.map((x) => ({ ...x })), lsn: s.lsn, checkpoints: [...s.checkpoints], ...(d.promotion ? { promotion: d.promotion } : {}) };
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
      minRecoveryLsn: this.clusterState.includes('recovery') ? this.minRecoveryLsn : 0n,
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

  async start(): Promise<void> {
    if (!this.data) throw new Error('start: no cluster in the data directory');
    if (this.run !== 'stopped') throw new Error('start: another server might be running');
    const epoch = ++this.epoch;
    this.run = 'starting';
    this.world.changed(this);
    await this.after(200, 600);
    if (epoch !== this.epoch || this.run !== 'starting' || !this.data) throw new Error('start: the server exited during start-up');
    const role = this.configured?.role ?? 'primary';
    this.role = role;
    this.activeUpstream = role === 'replica' ? this.configured?.upstream : undefined;
    this.ghostWritable = false;
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
    if (this.run === 'running' && this.role === 'replica') this.activeUpstream = this.configured?.role === 'replica' ? this.configured.upstream : undefined;
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
    this.clusterState = 'in archive recovery';
    this.minRecoveryLsn = this.data.lsn;
    this.dataGen++;
  }

  async removeData(): Promise<void> {
    if (this.run !== 'stopped') throw new Error('refusing to remove the data directory of a running server');
    this.data = undefined;
    this.clusterState = '';
    this.minRecoveryLsn = 0n;
    this.configured = undefined;
    this.dataGen++;
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
      const replication: ReplicationRow[] = [];
      const slots: Record<string, bigint> = {};
      for (const s of this.slots) slots[s] = 0n;
      return { ...base, inRecovery: false, flushLsn: d.lsn, streaming: false, replication, slots };
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

  async hasStandbySignal(): Promise<boolean> {
    return this.configured?.role === 'replica';
  }

  async readTimelineHistory(timeline: number): Promise<string> {
    const d = this.data;
    let idx = -1;
    if (d) for (let i = 0; i < d.segments.length; i++) if (d.segments[i]!.timeline === timeline) idx = i;
    if (!d || idx <= 0) throw new Error(`pg_wal/${String(timeline).padStart(8, '0')}.history: no such file`);
    const lines: string[] = [];
    for (let i = 0; i < idx; i++) lines.push(`${d.segments[i]!.timeline}\t${formatLsn(d.segments[i + 1]!.start)}\tno recovery target specified`);
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
