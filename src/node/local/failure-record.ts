/**
 * The last failed database action of this member and why (issue 30, item 2; rules in
 * src/domain/database-failure.ts). Its one writer is HaNode's subscription to the database
 * machine, which hands every snapshot to `observe`. Each failure is logged at warn with its
 * reason, every time (a bootstrap, clone or start that keeps failing names its cause each time);
 * the member key publishes it as `failure` (hactl list shows it) until an attempt starts again or
 * an effect succeeds.
 */
import type { Logger } from 'pino';
import {
  BOOTSTRAP_ACTIONS,
  failedAction,
  failureStands,
  failureText,
  type DatabaseSnap,
  type FailedAction,
} from '../../domain/database-failure.ts';

/** One failed action: which, why, when (epoch ms). */
export interface DatabaseFailure {
  action: FailedAction;
  reason: string;
  atMs: number;
}

/** What the record needs: the log. */
export interface FailureRecordDeps {
  log: Pick<Logger, 'warn'>;
}

export class FailureRecord {
  private prev: DatabaseSnap | undefined;
  private current: DatabaseFailure | undefined;

  constructor(private readonly d: FailureRecordDeps) {}

  /** The failure that describes the member now; undefined when none. */
  get last(): DatabaseFailure | undefined {
    return this.current;
  }

  /** `<action> failed: <reason>` of {@link last}; undefined when none. */
  get text(): string | undefined {
    return this.current ? failureText(this.current.action, this.current.reason) : undefined;
  }

  /** The reason of a failed bootstrap this member won (initdb, custom bootstrap, its first start); undefined otherwise. */
  get bootstrapFailure(): string | undefined {
    return this.current && BOOTSTRAP_ACTIONS.has(this.current.action) ? this.text : undefined;
  }

  /** Takes the machine's snapshot `next` (at `nowMs`): records and logs a failure, or clears one that no longer stands. */
  observe(next: DatabaseSnap, nowMs: number): void {
    const prev = this.prev;
    this.prev = next;
    const action = prev ? failedAction(prev, next) : undefined;
    if (action && next.lastError !== undefined) {
      this.current = { action, reason: next.lastError, atMs: nowMs };
      this.d.log.warn({ action, state: next.value }, failureText(action, next.lastError));
    } else if (this.current && prev && !failureStands(prev, next)) {
      this.current = undefined;
    }
  }
}
