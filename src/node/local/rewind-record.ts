/**
 * What this agent remembers of pg_rewind (docs/ha.md "Rewind"): the rewind under way (from which
 * leader, decided on which of its timelines) and the last one that failed. A failure after
 * pg_rewind began to change the data directory is never retried against the same leader
 * timeline (decideCycle reads `failure`); one that changed nothing (`untouched`: the leader
 * unreachable, …) is not remembered: the start back-off spaces the next attempt. A success, a
 * data directory that is gone or runs again, and a change of the rewind settings forget it.
 * Every write of these facts is in this file. No I/O.
 */
import type { RewindFailure } from '../../domain/ha-cycle.ts';
import type { RewindOutcome } from './effects.ts';

/** The rewind under way and the last one that failed. */
export class RewindRecord {
  private attempt: { leader: string; timeline: number } | undefined;
  private failed: RewindFailure | undefined;

  constructor(
    private readonly deps: {
      /** Logs and journals a node notice (`rewind.done`, `rewind.retry`, `rewind.failed`). */
      notice(type: string, text: string): void;
    },
  ) {}

  /** The pg_rewind under way (set by `started`), undefined when none. */
  get rewinding(): { leader: string; timeline: number } | undefined {
    return this.attempt;
  }

  /** The last pg_rewind that failed, until forgotten. */
  get failure(): RewindFailure | undefined {
    return this.failed;
  }

  /** A pg_rewind from `leader`, decided on its timeline `timeline`, begins (the executor's `rewind` action). */
  started(leader: string, timeline: number): void {
    this.attempt = { leader, timeline };
  }

  /**
   * How the pg_rewind ended (called by the clone actor): a failure after pg_rewind began to
   * change the data directory is remembered with the leader timeline it was decided on; one that
   * changed nothing is not; a success forgets any earlier failure.
   */
  ended(outcome: RewindOutcome): void {
    const attempt = this.attempt ?? { leader: outcome.from, timeline: 0 };
    this.attempt = undefined;
    if (outcome.ok) {
      this.failed = undefined;
      this.deps.notice('rewind.done', `pg_rewind from ${outcome.from} done: starting as its replica`);
      return;
    }
    const reason = outcome.error.replace(/\s+/g, ' ').slice(0, 500);
    if (outcome.untouched) {
      this.deps.notice(
        'rewind.retry',
        `pg_rewind from ${outcome.from} did not start, the data directory is unchanged: tried again after the start back-off: ${reason}`,
      );
      return;
    }
    this.failed = { leader: attempt.leader, timeline: attempt.timeline, reason };
    this.deps.notice(
      'rewind.failed',
      `pg_rewind from ${outcome.from} failed (not retried against timeline ${attempt.timeline} of ${attempt.leader}): ${reason}`,
    );
  }

  /** Forgets the failed rewind (the data directory is gone or runs again, or the rewind settings changed). */
  forget(): void {
    this.failed = undefined;
  }
}
