/**
 * `@ha/machines`: the HA machines as a library. The three XState v5 machines (database
 * lifecycle, scheduled switchover, scheduled restart) with their typed events, context and input,
 * the database state numbering, the scheduling rule they share, and the tools around them: the
 * journal (in memory), journaled actors, replay, and chart export (Mermaid, DOT, JSON; SVG from
 * the `@ha/machines/svg` entry). `@ha/machines/domain` has the states, the scheduling rule and
 * the restart request shape alone, without xstate. See README.md and docs/embedding.md of the
 * repository.
 *
 * Nothing here does I/O or reads a clock on its own: the database machine's effects are actors
 * the caller provides, every event carries its instant, and the journal hands its lines to an
 * optional sink. No Node.js built-in is imported, so the same code runs in browsers.
 *
 * Every export here is public API under semantic versioning (README.md "Versioning"); the report
 * of it is api/machines.api.md, checked by the tests.
 *
 * @packageDocumentation
 */
export {
  databaseMachine,
  BUSY_STATES,
  type AfterStop,
  type CloneInput,
  type DatabaseActor,
  type DatabaseContext,
  type DatabaseEvent,
  type DatabaseEventBase,
  type DatabaseInput,
  type DatabaseSnapshot,
  type ReplicaMethod,
  type StartInput,
  type StartRole,
  type StopInput,
} from './machines/database.ts';
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
} from './machines/switchover.ts';
export {
  restartMachine,
  scheduledRestartOf,
  restartPlanned,
  type RestartContext,
  type RestartEvent,
  type RestartInput,
  type RestartSnapshot,
  type ScheduledRestartRequest,
} from './machines/restart.ts';
export { DATABASE_STATES, databaseStateNumber, isDatabaseState, type DatabaseState, type Role } from './domain/states.ts';
export { decideScheduled, formatScheduledAt, type ScheduledDecision } from './domain/schedule.ts';
export { restartConditionsData, type RestartRequest, type RestartRole, type ScheduledRestartData } from './domain/restart-request.ts';
export {
  Journal,
  toJournalValue,
  type JournalEntry,
  type JournalOptions,
  type JournalSink,
  type NewJournalEntry,
  type Term,
} from './journal/journal.ts';
export { startJournaledActor, stateName, type JournaledActorOptions } from './journal/journaled-actor.ts';
export { replayMachine, parseJournal } from './journal/replay.ts';
export {
  renderChart,
  chartModel,
  activeStateIds,
  toMermaid,
  toDot,
  toJson,
  CHART_FORMATS,
  isChartFormat,
  type ChartFormat,
  type ChartModel,
  type ChartState,
  type ChartStateType,
  type ChartTransition,
  type DotOptions,
  type MermaidOptions,
  type RenderChartOptions,
  chartLayoutOf,
  scheduleChartLayout,
  DATABASE_CHART_LAYOUT,
  drawnEdges,
  chartPath,
  stepTransition,
  type ChartGroup,
  type ChartLayout,
  type ChartStep,
  type DrawnEdge,
} from './charts/index.ts';
