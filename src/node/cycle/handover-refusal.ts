/**
 * The last switchover or failover this leader refused, and why (issue 30, item 5): the executor
 * records it when it clears the `failover` key for a refusal (decideCycle's `clearFailover` with
 * `refused`); the member key publishes it as `switchover_refused` ({at, reason}), so the API that
 * took the request, on any member, answers with the reason instead of a bare "Switchover failed".
 */

/** One refusal: why, and when (epoch ms, the leader's clock). */
export interface HandoverRefusal {
  reason: string;
  atMs: number;
}

export class HandoverRefusals {
  /** One writer: record (the executor). */
  private current: HandoverRefusal | undefined;

  /** The last refusal; undefined before the first. */
  get last(): HandoverRefusal | undefined {
    return this.current;
  }

  /** Records a refusal `reason` at `atMs` (epoch ms). */
  record(reason: string, atMs: number): void {
    this.current = { reason, atMs };
  }
}
