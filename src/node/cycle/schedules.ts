/**
 * The node's scheduled work: the scheduled switchover and scheduled restart machines, fed with
 * what the DCS shows (the `failover` key), what the API asks (POST/DELETE /restart) and the
 * clock (a tick every HA cycle, plus a timer at each plan's instant so it fires at the instant,
 * not at the next loop). Both machines are journaled; their snapshots feed the API and metrics.
 */
import type { Actor } from 'xstate';
import type { ClusterView } from '../../domain/cluster.ts';
import type { ScheduledRestartData } from '../../domain/member.ts';
import { parseRestartRequest, type RestartRequest } from '../../domain/restart-conditions.ts';
import { restartMachine, restartPlanned, scheduledRestartOf } from '@ha/machines';
import { switchoverMachine, STALE } from '@ha/machines';
import type { Clock, TimerHandle } from '../clock.ts';
import type { Journal, Term } from '@ha/machines';
import { startJournaledActor } from '@ha/machines';

/** Where the leader stands with a switchover request (input of decideCycle). */
export type SwitchoverPhase = 'wait' | 'run' | 'stale';

/** The scheduled switchover and restart machines, ticked by the cycle and woken at their instants. */
export class ScheduledWork {
  readonly switchover: Actor<typeof switchoverMachine>;
  readonly restart: Actor<typeof restartMachine>;
  private readonly timers = new Set<TimerHandle>();
  private lastFailoverJson = '';

  constructor(private readonly opts: { journal: Journal; loopWaitMs: number; clock: Clock; wake: () => void; term: () => Term }) {
    const { journal, loopWaitMs, term } = opts;
    this.switchover = startJournaledActor(switchoverMachine, { name: 'switchover', input: { loopWaitMs }, journal, term });
    this.restart = startJournaledActor(restartMachine, { name: 'restart', input: { loopWaitMs }, journal, term });
  }

  /** Wakes the node at `atMs` (and ticks the machines then). */
  private wakeAt(atMs: number): void {
    const delay = Math.max(0, atMs - this.opts.clock.now());
    const t = this.opts.clock.setTimeout(
      () => {
        this.timers.delete(t);
        this.tick();
        this.opts.wake();
      },
      delay,
      { unref: true },
    );
    this.timers.add(t);
  }

  /** loop_wait changed. */
  setLoopWait(loopWaitMs: number): void {
    this.switchover.send({ type: 'config.loopWaitChanged', loopWaitMs });
    this.restart.send({ type: 'config.loopWaitChanged', loopWaitMs });
  }

  /** Feeds the `failover` key of the view into the switchover machine. */
  observeFailoverKey(view: ClusterView): void {
    const now = this.opts.clock.now();
    const req = view.failover?.value;
    const json = JSON.stringify(req ?? {});
    const active = !!req && !!(req.leader || req.member);
    const s = this.switchover.getSnapshot();
    if (active) {
      if (json === this.lastFailoverJson && s.value !== 'idle') return;
      this.lastFailoverJson = json;
      const atMs = req.scheduled_at ? Date.parse(req.scheduled_at) : undefined;
      if (s.value === 'done' || s.value === 'failed' || s.value === 'cancelled') this.switchover.send({ type: 'switchover.reset', now });
      this.switchover.send({
        type: 'switchover.requested',
        ...(req.leader ? { leader: req.leader } : {}),
        ...(req.member ? { candidate: req.member } : {}),
        ...(atMs !== undefined && !Number.isNaN(atMs) ? { atMs } : {}),
        now,
      });
      if (atMs !== undefined && !Number.isNaN(atMs) && atMs > now) this.wakeAt(atMs);
      return;
    }
    this.lastFailoverJson = '';
    if (s.value === 'scheduled') this.switchover.send({ type: 'switchover.cancelled', now });
    else if (s.value === 'executing') {
      const leader = view.leader?.name;
      const from = s.context.request?.leader;
      if (leader && leader !== from) this.switchover.send({ type: 'switchover.succeeded', newLeader: leader, now });
      else this.switchover.send({ type: 'switchover.failed', reason: 'the failover key was cleared without a new leader', now });
    }
  }

  /** A new leader took the lock while the switchover executes. */
  observeLeader(leader: string | undefined): void {
    const s = this.switchover.getSnapshot();
    if (s.value === 'executing' && leader && leader !== s.context.request?.leader) {
      this.switchover.send({ type: 'switchover.succeeded', newLeader: leader, now: this.opts.clock.now() });
    }
  }

  /**
   * Clock tick for both machines, sent only to a machine holding a plan (state `scheduled`, the
   * only one that handles `clock.tick` in src/machines/switchover.ts and restart.ts): a tick to
   * an idle machine changes nothing, and would cost an idle agent a journaled event per machine
   * and per cycle (issue 13).
   */
  tick(): void {
    const now = this.opts.clock.now();
    if (this.switchover.getSnapshot().value === 'scheduled') this.switchover.send({ type: 'clock.tick', now });
    if (this.restart.getSnapshot().value === 'scheduled') this.restart.send({ type: 'clock.tick', now });
  }

  /** The switchover phase for decideCycle, or undefined when the machine has no live plan. */
  switchoverPhase(): SwitchoverPhase | undefined {
    const s = this.switchover.getSnapshot();
    if (s.value === 'scheduled') return 'wait';
    if (s.value === 'executing') return 'run';
    if (s.value === 'failed' && s.context.reason === STALE) return 'stale';
    return undefined;
  }

  /** The leader gave up on the request (no healthy candidate, wrong leader, stale…). */
  switchoverFailed(reason: string): void {
    const s = this.switchover.getSnapshot();
    if (s.value === 'executing' || s.value === 'scheduled')
      this.switchover.send({ type: 'switchover.failed', reason, now: this.opts.clock.now() });
  }

  /**
   * Schedules a restart from the member-key form of a plan (POST /restart with `schedule`, or a
   * plan found in this member's key at agent start). False when one is already planned or the
   * plan does not parse.
   */
  scheduleRestart(plan: ScheduledRestartData, opts: { allowPast?: boolean } = {}): boolean {
    if (restartPlanned(this.restart.getSnapshot())) return false;
    const now = this.opts.clock.now();
    const { postmaster_start_time: _ignored, ...body } = plan;
    const atMs = Date.parse(plan.schedule);
    if (Number.isNaN(atMs)) return false;
    // A plan restored after an agent restart may already be due: parse it as of its own instant.
    const parsed = parseRestartRequest(body, opts.allowPast ? Math.min(now, atMs) : now);
    if (!parsed.ok) return false;
    const request = { ...parsed.value, atMs };
    this.restart.send({ type: 'restart.scheduled', request, now });
    if (atMs > now) this.wakeAt(atMs);
    return true;
  }

  /** Cancels a scheduled restart; false when none. */
  cancelRestart(): boolean {
    if (this.restart.getSnapshot().value !== 'scheduled') return false;
    this.restart.send({ type: 'restart.cancelled', now: this.opts.clock.now() });
    return true;
  }

  /** The restart plan due now, if the machine is executing one. */
  dueRestart(): RestartRequest | undefined {
    const s = this.restart.getSnapshot();
    return s.value === 'executing' ? s.context.request : undefined;
  }

  /** Reports the outcome of a due restart and returns the machine to idle. */
  restartFinished(outcome: { ok: true } | { ok: false; reason: string }): void {
    const now = this.opts.clock.now();
    if (outcome.ok) this.restart.send({ type: 'restart.succeeded', now });
    else this.restart.send({ type: 'restart.failed', reason: outcome.reason, now });
    this.restart.send({ type: 'restart.reset', now });
  }

  /** `scheduled_restart` for the member key and /ha, or undefined. */
  scheduledRestart(): ScheduledRestartData | undefined {
    return scheduledRestartOf(this.restart.getSnapshot());
  }

  stop(): void {
    for (const t of this.timers) this.opts.clock.clearTimeout(t);
    this.timers.clear();
    this.switchover.stop();
    this.restart.stop();
  }
}
