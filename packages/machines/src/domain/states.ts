/**
 * The 15 database states of the node API seed (000_ebb3d4076b9d2d55.txt, "States and
 * transitions"), with their fixed numbers. The numbers never change; new states get new numbers.
 */
export const DATABASE_STATES = [
  'initdb',
  'initdb_failed',
  'custom_bootstrap',
  'custom_bootstrap_failed',
  'creating_replica',
  'running',
  'starting',
  'bootstrap_starting',
  'start_failed',
  'restarting',
  'restart_failed',
  'stopping',
  'stopped',
  'stop_failed',
  'crashed',
] as const;

/** One of the 15 database states of the seed. */
export type DatabaseState = (typeof DATABASE_STATES)[number];

/** The fixed number of a state (the value of the `ha_database_state` metric). */
export function databaseStateNumber(state: DatabaseState): number {
  return DATABASE_STATES.indexOf(state);
}

/** True when `s` is one of the 15 state names. */
export function isDatabaseState(s: unknown): s is DatabaseState {
  return typeof s === 'string' && (DATABASE_STATES as readonly string[]).includes(s);
}

/** Role of a member as published in its member key and status document. */
export type Role = 'primary' | 'replica' | 'standby_leader' | 'uninitialized';
