/**
 * The 15 database states with their fixed numbers, and the member roles. They belong to the
 * machines library (packages/machines/src/domain/states.ts, the database lifecycle machine's
 * states); re-exported here so the agent's domain keeps one vocabulary module. From
 * `@ha/machines/domain`, which loads no machine (hactl, for one, never needs xstate).
 */
export { DATABASE_STATES, databaseStateNumber, isDatabaseState, type DatabaseState, type Role } from '@ha/machines/domain';
