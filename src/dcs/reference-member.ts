/**
 * The reference's member key read in our terms (issue 26, mixed clusters during a takeover). The
 * reference (Patroni 3.0.2, patroni/postgresql/__init__.py `set_role`/`set_state`, ha.py
 * `touch_member`) publishes the same member key layout with other words for two fields:
 *
 * - `role`: `master` (3.0.2's name of the primary), `promoted` (a primary right after
 *   pg_promote, before the next cycle), `demoted` (a former primary on its way to follow);
 * - `state`: words with spaces (`creating replica`, `start failed`, `restart failed (<state>)`,
 *   `initializing new cluster`, `running custom bootstrap script`, …) where ours use snake case.
 *
 * Without this, a member key of the reference does not parse (codec.ts drops it from the view):
 * our agent then takes the reference's leader for a ghost and does not follow it. Values that
 * are already ours pass unchanged; a role or state that is neither ours nor the reference's is
 * left as it is (and the key is refused by the schema, as before).
 */

/** The reference's roles with their meaning in ours (Role of src/domain/states.ts). */
const REFERENCE_ROLES: Readonly<Record<string, string>> = {
  master: 'primary',
  promoted: 'primary',
  demoted: 'replica',
};

/** The reference's states with their meaning in ours (DatabaseState). */
const REFERENCE_STATES: Readonly<Record<string, string>> = {
  'initializing new cluster': 'initdb',
  'initdb failed': 'initdb_failed',
  'running custom bootstrap script': 'custom_bootstrap',
  'custom bootstrap failed': 'custom_bootstrap_failed',
  'creating replica': 'creating_replica',
  'start failed': 'start_failed',
  'stop failed': 'stop_failed',
};

/**
 * Our role for a member key's `role`: the reference's `master`/`promoted` → `primary`,
 * `demoted` → `replica`; anything else unchanged.
 */
export function roleFromReference(role: unknown): unknown {
  return typeof role === 'string' ? (REFERENCE_ROLES[role] ?? role) : role;
}

/**
 * Our state for a member key's `state`: the reference's words mapped to ours (`restart failed`
 * with any parenthesised suffix → `restart_failed`); anything else unchanged.
 */
export function stateFromReference(state: unknown): unknown {
  if (typeof state !== 'string') return state;
  if (state.startsWith('restart failed')) return 'restart_failed';
  return REFERENCE_STATES[state] ?? state;
}

/**
 * A parsed member key value with the reference's `role` and `state` put in our words (a new
 * object; other fields as they are). Non-objects are returned unchanged.
 */
export function memberFromReference(data: unknown): unknown {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const d = data as Record<string, unknown>;
  if (!('role' in d) && !('state' in d)) return data;
  return { ...d, role: roleFromReference(d['role']), state: stateFromReference(d['state']) };
}
