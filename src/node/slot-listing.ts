/**
 * When a replication slot listing (`PgControl.listSlots`, one SQL round trip) can be skipped
 * (issue 13: idle cost). The leader and the replicas plan their slots from a full listing each
 * cycle; a listing that needed no change is reused while nothing it was planned from moved (the
 * caller's `key`: the probe's physical slots, the wanted slots, the slot settings, …), for at most
 * SLOT_LISTING_REUSE_MS. The reference lists slots only when it schedules it (start, promotion, a
 * failed slot operation); the time bound here makes sure an inactive slot created behind the
 * agent's back is still dropped within a minute.
 */

/** How long a quiet listing is reused, ms. */
export const SLOT_LISTING_REUSE_MS = 60_000;

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
