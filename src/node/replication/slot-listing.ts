/**
 * When a replication slot listing (`PgControl.listSlots`, one SQL round trip) can be skipped
 * (issue 13: idle cost). The leader and the replicas plan their slots from a full listing each
 * cycle; a listing that needed no change is reused while nothing it was planned from moved (the
 * caller's `key`: the probe's physical slots, the wanted slots, the slot settings, …; and no
 * unwanted slot kept only because it is in use, see isQuietPlan), for at most
 * SLOT_LISTING_REUSE_MS. The reference lists slots only when it schedules it (start, promotion, a
 * failed slot operation); the time bound here makes sure an inactive slot created behind the
 * agent's back is still dropped within a minute.
 */

import type { SlotInfo } from '../../postgres/types.ts';

/**
 * True when a slot plan made from `existing` changes nothing now and waits on nothing:
 * `plan` has no action, and `replan` (the same planning over `existing` with every slot taken as
 * inactive) drops nothing, i.e. no unwanted slot is only kept because it is in use (it is to be
 * dropped as soon as its consumer goes: the listing must be taken again).
 */
export function isQuietPlan(
  existing: SlotInfo[],
  plan: { drop: string[]; createPhysical: string[]; createLogical: unknown[]; advance?: unknown[] },
  replan: (inactive: SlotInfo[]) => { drop: string[] },
): boolean {
  if (plan.drop.length || plan.createPhysical.length || plan.createLogical.length || plan.advance?.length) return false;
  if (!existing.some((s) => s.active)) return true;
  return replan(existing.map((s) => ({ ...s, active: false }))).drop.length === 0;
}

/** How long a quiet listing is reused, ms. */
export const SLOT_LISTING_REUSE_MS = 60_000;

/** A slot listing reused while nothing it was planned from moved. */
export class QuietSlotListing {
  private quiet: { key: string; atMs: number } | undefined;

  /** True when the last listing needed no change, was planned from the same `key`, and is younger than SLOT_LISTING_REUSE_MS at `nowMs` (epoch ms). */
  reusable(key: string, nowMs: number): boolean {
    const q = this.quiet;
    if (q && q.key === key && nowMs - q.atMs < SLOT_LISTING_REUSE_MS) return true;
    this.quiet = undefined;
    return false;
  }

  /** A listing started at `atMs` (epoch ms) for `key`: reusable only when its plan changed nothing (`quiet`). */
  listed(key: string, atMs: number, quiet: boolean): void {
    this.quiet = quiet ? { key, atMs } : undefined;
  }
}
