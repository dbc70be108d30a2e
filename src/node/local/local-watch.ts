/**
 * The local PostgreSQL between HA cycles: the status probe and a crash watcher, so a dead
 * postmaster is noticed at once instead of at the next loop, and so is a data directory wiped
 * under a running postmaster.
 *
 * Probe freshness (issue 13): the probe the API answers from is at most `maxProbeAgeMs` (1 s) old,
 * counted from the probe's start. Either a background probe runs every `probeEveryMs` (the
 * simulator, whose peers read snapshots directly), or — `probeEveryMs: 0`, the agent — probes run
 * on demand: each HA cycle probes (probeNow), and a reader of probe data (health checks, /ha, the
 * peers' status reads, /metrics) calls `fresh()` first, which starts a probe when the last one is
 * older than 1 s. One probe is in flight at a time, shared by every caller (single flight); a
 * reader waits for it at most `readWaitMs` from that probe's start, then answers from what is
 * known (as when a probe fails). An idle agent then probes once per loop_wait instead of every
 * second.
 *
 * Crash detection is driven by an event when the PgControl offers `openWatchConnection`
 * (LocalPostgres): one idle connection is kept open while the database runs; a backend exits as
 * soon as its postmaster dies, so the connection's end triggers a postmaster check at once, then
 * every 10 ms for 300 ms (the postmaster may still be exiting). The poll (postmaster.pid + kill 0,
 * the data directory's files) then only runs once a second as a fallback (and reopens the
 * connection). Without `openWatchConnection` (the simulator) the poll runs every 100 ms.
 * A wiped data directory is noticed by an event too when the PgControl offers `watchDataDir`
 * (inotify on the directory's own entries). While both event sources are open the poll only runs
 * every `idleCheckEveryMs` (10 s, the reference's own check of its postmaster once per loop); as soon as one is lost it runs every second again until it is
 * back (issue 13: an idle agent's wake-ups). Under an HA loop the same poll runs at the end of
 * every cycle (`cyclePoll`), and the timed one only every 3 × `idleCheckEveryMs` as its fallback.
 * Probe cost: ~0.2 ms of CPU plus its garbage; one poll: ~0.03 ms.
 */
import type { PgStatus } from '../../domain/pg-status.ts';
import type { PgControl } from '../../postgres/types.ts';
import { everyOn, systemClock, type Clock } from '../clock.ts';

/** What the watch needs to know of the database machine. */
export interface WatchedDatabase {
  /** State name, e.g. `running`. */
  value: string;
  /** A promotion is in progress (the postmaster may restart its processes). */
  promoting: boolean;
  /**
   * Epoch ms of the machine's last command (its context's `sinceMs`): tells one run from the next.
   * A check reports a death only when it is unchanged from the check's start to its answer.
   */
  sinceMs?: number;
}

/** What the watch reads and calls (HaNode wires it). */
export interface LocalWatchDeps {
  pg: Pick<PgControl, 'postmasterPid' | 'probe' | 'dataDirProblem' | 'openWatchConnection' | 'watchDataDir'>;
  /** The database machine's state; undefined before it starts. */
  database: () => WatchedDatabase | undefined;
  /** Bound of one probe, ms. */
  probeTimeoutMs: () => number;
  /** Called once when a running database's postmaster is gone. */
  onDied: () => void;
  /**
   * Called once when the data directory of a running database disappears (the directory, its
   * PG_VERSION or global/pg_control), with what is missing; the postmaster may still run.
   * Reported before (and instead of) `onDied`. Needs `pg.dataDirProblem`.
   */
  onDataDirGone?: (reason: string) => void;
  /**
   * Background probe period, ms; default 1000. 0: no background probe, probes on demand
   * (`probeOnce` from the HA cycle, `fresh()` from readers).
   */
  probeEveryMs?: number;
  /** Oldest probe `fresh()` accepts without probing, ms; default 1000. */
  maxProbeAgeMs?: number;
  /** How long after a probe's start `fresh()` callers wait for it at most, ms; default 1000. */
  readWaitMs?: number;
  /**
   * Fixed poll period, ms. Default: 100 ms without `openWatchConnection`; with it 1000 ms,
   * or `idleCheckEveryMs` while the watch connection (and the data directory watch, when the
   * PgControl offers `watchDataDir`) are open.
   */
  checkEveryMs?: number;
  /** Poll period while every event source is open, ms; default 10000. */
  idleCheckEveryMs?: number;
  /** Timers; default real time. */
  clock?: Clock;
}

/** The probe and the crash watcher of the local PostgreSQL (see the module comment). */
export class LocalWatch {
  /** The latest successful probe while the database runs; undefined otherwise. */
  probe: PgStatus | undefined;
  /** Clock time the last completed probe started (failed ones too); undefined before the first. */
  probedAtMs: number | undefined;
  /** The probe in flight, shared by every caller, and when it started. */
  private inflight: { done: Promise<void>; startedAtMs: number } | undefined;
  /** Readers waiting in `fresh()`; released at once when the postmaster or the data directory is reported gone. */
  private readonly waiters = new Set<() => void>();
  private checking = false;
  private stopped = false;
  /** The newest timeline this running replica was seen on (see withReplicaTimeline). */
  private replicaTimeline = 0;
  /** The wiped data directory was reported; reset once it is back or the database stops running. */
  private goneReported = false;
  private readonly timers: (() => void)[] = [];
  /** Closes the open watch connection; undefined when none is open. */
  private closeWatch: (() => void) | undefined;
  private openingWatch = false;
  /** Cancels the checks that follow a closed watch connection. */
  private cancelBurst: (() => void) | undefined;
  /** Stops the data directory watch; undefined when none is open. */
  private closeDirWatch: (() => void) | undefined;
  /** The next poll and the clock time it is due. */
  private pollTimer: ReturnType<Clock['setTimeout']> | undefined;
  private pollDueMs = 0;
  /** An HA loop polls at the end of each cycle (cyclePoll): the idle timed poll is then only its fallback. */
  private cycleDriven = false;

  constructor(private readonly deps: LocalWatchDeps) {}

  private get clock(): Clock {
    return this.deps.clock ?? systemClock;
  }

  /** True when crash detection is driven by the watch connection's end. */
  get eventDriven(): boolean {
    return typeof this.deps.pg.openWatchConnection === 'function';
  }

  start(): void {
    const clock = this.clock;
    const probeEveryMs = this.deps.probeEveryMs ?? 1000;
    if (probeEveryMs > 0) this.timers.push(everyOn(clock, probeEveryMs, () => void this.probeOnce()));
    this.keepWatchConnection();
    this.keepDirWatch();
    this.schedulePoll(this.pollEveryMs());
  }

  stop(): void {
    this.stopped = true;
    for (const cancel of this.timers) cancel();
    if (this.pollTimer !== undefined) this.clock.clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    this.cancelBurst?.();
    this.dropWatchConnection();
    this.dropDirWatch();
  }

  /**
   * The poll the HA loop runs at the end of every cycle, in the cycle's own wake-up: checks the
   * postmaster and the data directory and reopens a lost event source, as the timed poll does.
   * From the first call on, the timed poll while every event source is open comes every
   * 3 × `idleCheckEveryMs` (30 s) instead of every `idleCheckEveryMs`: it is then only the
   * fallback for a cycle that runs long (an action in progress), and an idle agent wakes once per
   * loop_wait instead of twice (issue 13; ~0.2 ms of CPU per wake-up of an idle process here,
   * docs/performance.md). The timer is not moved by this call: moving a Node timer leaves its
   * old expiry in the event loop, an empty wake-up of its own.
   */
  cyclePoll(): void {
    if (this.stopped) return;
    this.cycleDriven = true;
    this.pollNow();
  }

  /** The poll period now (see `checkEveryMs` and `cyclePoll`). */
  private pollEveryMs(): number {
    if (this.deps.checkEveryMs !== undefined) return this.deps.checkEveryMs;
    if (!this.eventDriven) return 100;
    const dirWatched = !this.deps.pg.watchDataDir || this.closeDirWatch !== undefined;
    const idle = this.deps.idleCheckEveryMs ?? 10_000;
    return this.closeWatch && dirWatched ? (this.cycleDriven ? 3 * idle : idle) : 1000;
  }

  private schedulePoll(delayMs: number): void {
    if (this.stopped) return;
    const clock = this.clock;
    if (this.pollTimer !== undefined) clock.clearTimeout(this.pollTimer);
    this.pollDueMs = clock.now() + delayMs;
    this.pollTimer = clock.setTimeout(() => this.poll(), delayMs);
  }

  /** An event source was lost: the next poll comes within the shorter period. */
  private pollSoon(): void {
    const every = this.pollEveryMs();
    if (this.pollTimer !== undefined && this.pollDueMs - this.clock.now() > every) this.schedulePoll(every);
  }

  private poll(): void {
    this.pollTimer = undefined;
    if (this.stopped) return;
    this.pollNow();
    this.schedulePoll(this.pollEveryMs());
  }

  /** One poll: the postmaster and data directory check, and a lost event source reopened. */
  private pollNow(): void {
    void this.checkPostmaster();
    this.keepWatchConnection();
    this.keepDirWatch();
  }

  /** Watches the data directory while the database runs; stops watching otherwise. */
  private keepDirWatch(): void {
    const watchDir = this.deps.pg.watchDataDir;
    if (!watchDir || this.stopped) return;
    const db = this.deps.database();
    if (!db || db.value !== 'running') {
      this.dropDirWatch();
      return;
    }
    if (this.closeDirWatch) return;
    try {
      const close = watchDir.call(this.deps.pg, (ended) => {
        if (ended && this.closeDirWatch === close) {
          this.closeDirWatch = undefined;
          this.pollSoon();
        }
        if (!this.stopped) void this.checkPostmaster();
      });
      this.closeDirWatch = close;
    } catch {
      // Missing directory or inotify limits: the poll checks it (every second) and retries.
    }
  }

  private dropDirWatch(): void {
    const close = this.closeDirWatch;
    this.closeDirWatch = undefined;
    close?.();
  }

  /** Opens the watch connection while the database runs (not while promoting); closes it otherwise. */
  private keepWatchConnection(): void {
    const open = this.deps.pg.openWatchConnection;
    if (!open || this.stopped) return;
    const db = this.deps.database();
    if (!db || db.value !== 'running') {
      this.dropWatchConnection();
      return;
    }
    if (db.promoting || this.closeWatch || this.openingWatch) return;
    this.openingWatch = true;
    open
      .call(this.deps.pg, () => this.watchClosed(), this.deps.probeTimeoutMs())
      .then(
        (close) => {
          if (this.stopped || this.closeWatch) close();
          else this.closeWatch = close;
        },
        () => undefined, // not reachable now: the poll retries
      )
      .finally(() => {
        this.openingWatch = false;
      });
  }

  private dropWatchConnection(): void {
    const close = this.closeWatch;
    this.closeWatch = undefined;
    close?.();
  }

  /** The watch connection ended: check the postmaster now, then every 10 ms for 300 ms. */
  private watchClosed(): void {
    this.closeWatch = undefined;
    if (this.stopped) return;
    this.pollSoon();
    this.cancelBurst?.();
    const clock = this.clock;
    const until = clock.now() + 300;
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    let cancelled = false;
    this.cancelBurst = () => {
      cancelled = true;
      if (timer !== undefined) clock.clearTimeout(timer);
    };
    const step = async () => {
      timer = undefined;
      if (cancelled || this.stopped) return;
      const db = this.deps.database();
      if (!db || db.value !== 'running') return;
      await this.checkPostmaster();
      if (cancelled || this.stopped || this.deps.database()?.value !== 'running') return;
      if (clock.now() < until) timer = clock.setTimeout(() => void step(), 10);
      else this.keepWatchConnection();
    };
    void step();
  }

  /**
   * One status probe; a probe already in flight is shared (single flight) instead of starting
   * another. Clears `probe` when the database does not run or does not answer. Never rejects.
   */
  probeOnce(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const running = this.inflight;
    if (running) return running.done;
    const startedAtMs = this.clock.now();
    const done = this.runProbe(startedAtMs).finally(() => {
      if (this.inflight?.done === done) this.inflight = undefined;
    });
    this.inflight = { done, startedAtMs }; // cleared by the finally above, a microtask later at the earliest
    return done;
  }

  /**
   * A probe that started at or after `tMs` (clock time): waits for one in flight that started
   * earlier, then starts one unless another caller already did. For a value that must not be
   * older than some other observation (a running primary's WAL position compared with the
   * peers' positions read at `tMs`). Never rejects.
   */
  async probeStartedAfter(tMs: number): Promise<void> {
    const flight = this.inflight;
    if (flight && flight.startedAtMs < tMs) await flight.done;
    const again = this.inflight;
    if (again && again.startedAtMs >= tMs) return again.done;
    if (!again && this.probedAtMs !== undefined && this.probedAtMs >= tMs) return;
    return this.probeOnce();
  }

  /**
   * What a reader of probe data awaits before answering: undefined when the probe is fresh
   * enough — started at most `maxProbeAgeMs` ago, or nothing to probe (the database does not
   * run, the watch stopped), or the probe in flight started more than `readWaitMs` ago (answer
   * from what is known) — so the caller can answer synchronously; otherwise a promise that
   * resolves once a probe started now (or the one in flight) completes, or `readWaitMs` after
   * that probe's start, whichever comes first, or once the postmaster is reported dead (the
   * crash is then answered at once). Never rejects.
   */
  fresh(): Promise<void> | undefined {
    if (this.stopped) return undefined;
    // The clock first: the common case of a health-check storm, without allocating.
    const clock = this.clock;
    const now = clock.now();
    if (this.probedAtMs !== undefined && now - this.probedAtMs <= (this.deps.maxProbeAgeMs ?? 1000)) return undefined;
    const db = this.deps.database();
    if (!db || db.value !== 'running') return undefined;
    const done = this.probeOnce();
    const flight = this.inflight;
    if (!flight) return undefined;
    const left = flight.startedAtMs + (this.deps.readWaitMs ?? 1000) - now;
    if (left <= 0) return undefined;
    return new Promise<void>((resolve) => {
      const release = () => {
        clock.clearTimeout(timer);
        this.waiters.delete(release);
        resolve();
      };
      const timer = clock.setTimeout(release, left, { unref: true });
      this.waiters.add(release);
      void done.then(release);
    });
  }

  /** Readers waiting for a probe answer now (the database just died: nothing to wait for). */
  private releaseWaiters(): void {
    for (const release of [...this.waiters]) release();
  }

  private async runProbe(startedAtMs: number): Promise<void> {
    const db = this.deps.database();
    if (db && db.value !== 'running') {
      this.probe = undefined;
      this.replicaTimeline = 0;
      this.probedAtMs = startedAtMs;
      return;
    }
    try {
      this.probe = this.withReplicaTimeline(await this.deps.pg.probe(this.deps.probeTimeoutMs()));
    } catch {
      this.probe = undefined;
    } finally {
      this.probedAtMs = startedAtMs;
    }
  }

  /**
   * A replica's timeline is the newest it has replayed into: pg_stat_wal_receiver.received_tli
   * while streaming, but once the receiver is gone the probe only has the last restartpoint's
   * timeline, which may be older. The newest one seen since the database started is kept, so /ha,
   * the member key and the leader race never report a replica behind where it is.
   */
  private withReplicaTimeline(p: PgStatus): PgStatus {
    if (!p.inRecovery) {
      this.replicaTimeline = 0;
      return p;
    }
    this.replicaTimeline = Math.max(this.replicaTimeline, p.timeline);
    return p.timeline === this.replicaTimeline ? p : { ...p, timeline: this.replicaTimeline };
  }

  /**
   * Crash watcher: a running database whose data directory is gone is reported once (the
   * postmaster may outlive it and must be stopped by PID); one whose postmaster is gone is
   * reported at once.
   */
  private async checkPostmaster(): Promise<void> {
    if (this.checking || this.stopped) return;
    const db = this.deps.database();
    if (!db || db.value !== 'running') {
      this.goneReported = false;
      return;
    }
    if (db.promoting) return;
    this.checking = true;
    try {
      const onGone = this.deps.onDataDirGone;
      const gone = onGone ? this.deps.pg.dataDirProblem?.() : undefined;
      if (gone !== undefined) {
        if (!this.goneReported) {
          this.goneReported = true;
          this.probe = undefined;
          onGone!(gone);
          this.releaseWaiters();
        }
        return;
      }
      this.goneReported = false;
      const runSinceMs = db.sinceMs;
      const pid = await this.deps.pg.postmasterPid();
      // The same run as at the check's start: an answer that arrives after the database was
      // stopped and started again (a late event loop) says nothing of the new postmaster.
      const after = this.deps.database();
      if (pid === undefined && after?.value === 'running' && after.sinceMs === runSinceMs) {
        this.probe = undefined;
        this.deps.onDied();
        this.releaseWaiters();
      }
    } finally {
      this.checking = false;
    }
  }
}
