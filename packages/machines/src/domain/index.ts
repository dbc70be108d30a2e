/**
 * `@ha/machines/domain`: the vocabulary the machines share with their users, without the
 * machines: the 15 database states and their fixed numbers, the member roles, the rule of the
 * scheduled actions (wait, run, or stale after 1.5 × loop_wait) and the shape of a restart
 * request. Plain functions and types: this entry imports nothing, not even xstate, so a command
 * line tool or a dashboard that only maps `ha_database_state` numbers to names loads no machine.
 * The main entry, `@ha/machines`, exports the same things.
 *
 * @packageDocumentation
 */
export { DATABASE_STATES, databaseStateNumber, isDatabaseState, type DatabaseState, type Role } from './states.ts';
export { decideScheduled, formatScheduledAt, type ScheduledDecision } from './schedule.ts';
export { restartConditionsData, type RestartRequest, type RestartRole, type ScheduledRestartData } from './restart-request.ts';
