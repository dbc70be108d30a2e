/**
 * Which database action failed, read from two consecutive snapshots of the database machine
 * (issue 30, item 2): the reasons exist in the machine's `lastError` (and the journal), and the
 * agent's log, the member key and `hactl list` name them. Pure.
 *
 * A failure is a transition the machine takes on an effect's error (packages/machines
 * database.ts): initdb → initdb_failed, custom_bootstrap → custom_bootstrap_failed,
 * bootstrap_starting → start_failed, starting → start_failed, restarting → restart_failed,
 * stopping → stop_failed, creating_replica → stopped (a clone, or pg_rewind when the replica
 * method was `rewind`), and a promotion that ended with the role still `replica`.
 */
import type { DatabaseState, Role } from './states.ts';

/** The action that failed, as the log and `hactl list` name it. */
export type FailedAction =
  | 'initdb'
  | 'custom bootstrap'
  | 'start after custom bootstrap'
  | 'start'
  | 'restart'
  | 'stop'
  | 'clone'
  | 'pg_rewind'
  | 'promote';

/** What a snapshot of the database machine says about failures. */
export interface DatabaseSnap {
  value: DatabaseState;
  role: Role;
  promoting: boolean;
  /** `basebackup` or `rewind`: how creating_replica makes the data directory. */
  replicaMethod: string;
  /** The last effect's error message; cleared when an effect succeeds. */
  lastError: string | undefined;
}

/** The failed actions of a bootstrap this member won: the `initialize` key is given back after them. */
export const BOOTSTRAP_ACTIONS: ReadonlySet<FailedAction> = new Set(['initdb', 'custom bootstrap', 'start after custom bootstrap']);

/** States in which a failure is still the member's situation (shown until an attempt starts again or the database runs). */
const FAILURE_STATES: ReadonlySet<DatabaseState> = new Set([
  'initdb_failed',
  'custom_bootstrap_failed',
  'start_failed',
  'restart_failed',
  'stop_failed',
  'stopped',
]);

/** The action whose failure took the machine from `prev` to `next`; undefined when none failed. */
export function failedAction(prev: DatabaseSnap, next: DatabaseSnap): FailedAction | undefined {
  if (next.lastError === undefined) return undefined;
  const from = prev.value;
  const to = next.value;
  if (from === 'initdb' && to === 'initdb_failed') return 'initdb';
  if (from === 'custom_bootstrap' && to === 'custom_bootstrap_failed') return 'custom bootstrap';
  if (from === 'bootstrap_starting' && to === 'start_failed') return 'start after custom bootstrap';
  if (from === 'starting' && to === 'start_failed') return 'start';
  if (from === 'restarting' && to === 'restart_failed') return 'restart';
  if (from === 'stopping' && to === 'stop_failed') return 'stop';
  if (from === 'creating_replica' && to === 'stopped') return prev.replicaMethod === 'rewind' ? 'pg_rewind' : 'clone';
  if (prev.promoting && !next.promoting && next.role !== 'primary' && next.lastError !== prev.lastError) return 'promote';
  return undefined;
}

/**
 * Whether a failure recorded earlier still describes a member whose machine went from `prev` to
 * `next` (else it is cleared): the error is still the machine's last, no attempt has started
 * again, and a stop did not just succeed.
 */
export function failureStands(prev: Pick<DatabaseSnap, 'value'>, next: Pick<DatabaseSnap, 'value' | 'lastError'>): boolean {
  if (next.lastError === undefined) return false;
  if (prev.value === 'stopping' && next.value === 'stopped') return false;
  return FAILURE_STATES.has(next.value) || next.value === 'running';
}

/** `<action> failed: <reason>`, the text of the log line, the member key's `failure` and `hactl list`. */
export function failureText(action: FailedAction, reason: string): string {
  return `${action} failed: ${reason}`;
}
