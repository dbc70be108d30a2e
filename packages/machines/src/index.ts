/**
 * The machines as a library (`import … from 'ha/machines'`): the three XState v5 machines with
 * their typed events, context and input, the database state numbering, and the tools around
 * them (journal, journaled actors, replay, charts). See docs/embedding.md.
 *
 * The machines themselves do no I/O; effects of the database machine are actors the caller
 * provides. `Journal` can write a file when given a `path`; without one it stays in memory.
 */
export {
  databaseMachine,
  BUSY_STATES,
  type AfterStop,
  type DatabaseActor,
  type DatabaseContext,
  type DatabaseEvent,
  type DatabaseInput,
  type DatabaseSnapshot,
  type StartInput,
  type StartRole,
  type StopInput,
} from './database.ts';
export {
  switchoverMachine,
  scheduledSwitchoverOf,
  switchoverInProgress,
  STALE,
  type ScheduledSwitchoverSummary,
  type SwitchoverContext,
  type SwitchoverEvent,
  type SwitchoverInput,
  type SwitchoverPlan,
  type SwitchoverSnapshot,
} from './switchover.ts';
export {
  restartMachine,
  scheduledRestartOf,
  restartPlanned,
  type RestartContext,
  type RestartEvent,
  type RestartInput,
  type RestartSnapshot,
  type ScheduledRestartRequest,
} from './restart.ts';
export { DATABASE_STATES, databaseStateNumber, isDatabaseState, type DatabaseState, type Role } from '../domain/states.ts';
export type { RestartRequest } from '../domain/restart-conditions.ts';
export { Journal, toJournalValue, type JournalEntry, type JournalOptions, type JournalSink, type NewJournalEntry, type Term } from '../journal/journal.ts';
export { startJournaledActor, stateName } from '../journal/journaled-actor.ts';
export { replayMachine, parseJournal } from '../journal/replay.ts';
export {
  renderChart,
  chartModel,
  activeStateIds,
  CHART_FORMATS,
  isChartFormat,
  type ChartFormat,
  type ChartModel,
  type ChartState,
  type ChartTransition,
  type RenderChartOptions,
} from '../charts/index.ts';
