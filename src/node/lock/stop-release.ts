/**
 * The leader lock released once the database has stopped (docs/ha.md "Switchover", "Shutdown"):
 * a graceful demotion and the agent's shutdown stop PostgreSQL first, then publish its final
 * checkpoint LSN in `status` (the new leader knows where the old one ended) and release the
 * lock, so a replica takes over at once instead of after ttl. The executor asks for it with the
 * demotion, the agent's shutdown with its stop; the database machine reports the stop
 * (`afterStop`). The one owner of that request.
 */
import type { PgControl } from '../../postgres/types.ts';
import type { LeaderDuties, LeaderDutiesDeps } from '../replication/leader-duties.ts';
import type { LeaderLock } from './leader-lock.ts';

/** What the release reads and calls (HaNode wires it). */
export interface StopReleaseDeps extends Pick<LeaderDutiesDeps, 'dcs' | 'log'> {
  lock: Pick<LeaderLock, 'release'>;
  /** The final checkpoint is read from pg_controldata and published in `status` (LeaderDuties.finalStatus). */
  pg: Pick<PgControl, 'controlData'>;
  duties: Pick<LeaderDuties, 'finalStatus'>;
  /** Tells observers that leadership changed. */
  emitChange(): void;
}

/** The lock release asked for with a stop, carried out once the database stopped. */
export class StopRelease {
  /** The stop in progress releases the lock when done. */
  private pending = false;

  constructor(private readonly d: StopReleaseDeps) {}

  /** The stop being sent (a demotion, the shutdown) releases the lock when done when `release`. */
  request(release: boolean): void {
    this.pending = release;
  }

  /** The stop in progress has not released the lock yet. */
  get requested(): boolean {
    return this.pending;
  }

  /** After a stop (the database machine's stop effect): the release asked for, if any. */
  async afterStop(): Promise<void> {
    if (!this.pending) return;
    this.pending = false;
    await this.releaseWithStatus();
  }

  /** Publishes the final checkpoint LSN in `status`, then releases the lock (retried every cycle when it fails). */
  async releaseWithStatus(): Promise<void> {
    const { dcs, pg, log } = this.d;
    try {
      const cd = await pg.controlData();
      await dcs.setStatus(this.d.duties.finalStatus(Number(cd.checkpointLsn)));
    } catch (e) {
      log.warn({ err: String(e) }, 'could not publish the final checkpoint');
    }
    const released = await this.d.lock.release();
    if (!released) log.warn('releasing the leader key failed: retried every cycle');
    this.d.emitChange();
  }
}
