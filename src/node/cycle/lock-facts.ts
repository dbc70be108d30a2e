/**
 * The leader lock's part of the gather step (docs/ha.md "The leader lock"; the lock itself is
 * src/node/lock/leader-lock.ts): renew the incarnation this agent holds with a compare-and-set,
 * adopt its own key at start, retry a release that did not reach the DCS, and never let the
 * cycle act on a view that still shows a lock it released or lost (the DCS is re-read instead).
 */
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import type { ClusterView } from '../../domain/cluster.ts';
import type { PgControl } from '../../postgres/types.ts';
import type { LeaderLock, RenewalBasis } from '../lock/leader-lock.ts';

/** What the lock step reads and calls. */
export interface LockFactsDeps {
  lock: Pick<LeaderLock, 'releasePending' | 'retryRelease' | 'read' | 'release' | 'renew' | 'adopt'>;
  /** The fence allows leading (fencing.ts `mayLead`: false when watchdog.mode is required and the fence cannot be armed). */
  mayLead(): boolean;
  pg: Pick<PgControl, 'postmasterPid'>;
  dcs: Pick<Dcs, 'view' | 'refresh'>;
  log: Pick<Logger, 'warn'>;
  /** Logs and journals a node notice (`lock.*`, `watchdog.released`). */
  notice(type: string, text: string): void;
}

/** The lock as this cycle found it: the view to decide on, whether the DCS answered, whether the lock is held, the renewal's result. */
export interface LockFacts {
  view: ClusterView;
  dcsOk: boolean;
  holdsLock: boolean;
  renewal?: 'ok' | 'failed';
}

/**
 * The lock step of one cycle on `view` (read after the keepalive, which answered when `dcsOk`).
 * `keptAlive`: when that keepalive was sent (the renewal skips its own and counts from it).
 */
export async function lockFacts(deps: LockFactsDeps, view: ClusterView, dcsOk: boolean, keptAlive: RenewalBasis): Promise<LockFacts> {
  const { lock } = deps;
  if (!dcsOk) return { view, dcsOk, holdsLock: false };
  if (lock.releasePending) await lock.retryRelease();
  const reading = lock.read(view);
  if (reading === 'mine') {
    // watchdog.mode required and the fence cannot be armed (fencing.ts): a running primary
    // demotes as after a failed renewal; once no postmaster runs the lock is given up.
    const fenceOk = deps.mayLead();
    if (!fenceOk && (await deps.pg.postmasterPid()) === undefined) {
      await lock.release();
      deps.notice('watchdog.released', 'released the leader lock: watchdog.mode is required and the fence cannot be armed');
      return { view: deps.dcs.view(), dcsOk, holdsLock: false };
    }
    const r = await lock.renew(keptAlive);
    if (r === 'lost') deps.notice('lock.lost', 'lost the leader lock: the key is gone or is not the one this member created');
    // A lost lock is not held from here on (the view may still name us: decideCycle then waits
    // for the key to clear); a renewal the DCS did not answer still is, until it runs out.
    return { view: deps.dcs.view(), dcsOk, holdsLock: r !== 'lost', renewal: r === 'ok' && fenceOk ? 'ok' : 'failed' };
  }
  if (reading === 'adoptable') {
    try {
      if (await lock.adopt(view)) {
        deps.notice('lock.adopted', `adopted the leader key (create revision ${view.leader?.createRevision}) that names this member`);
        return { view: deps.dcs.view(), dcsOk, holdsLock: true, renewal: 'ok' };
      }
    } catch (e) {
      deps.log.warn({ err: String(e) }, 'adopting the leader key failed');
    }
    return { view: deps.dcs.view(), dcsOk, holdsLock: false };
  }
  if (reading === 'stale') {
    try {
      return { view: await deps.dcs.refresh(), dcsOk, holdsLock: false };
    } catch {
      return { view, dcsOk: false, holdsLock: false };
    }
  }
  return { view, dcsOk, holdsLock: false };
}
