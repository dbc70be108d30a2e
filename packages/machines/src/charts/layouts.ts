/**
 * The readable layouts of this package's machines (the /ui page and `ha chart` draw them), and
 * the rule for any other machine. See docs/charts.md "Layout".
 */
import type { ChartModel } from './model.ts';
import type { ChartGroup, ChartLayout } from './layout.ts';

/** What every preset shares: top to bottom, one edge per pair of states, group boxes carry shared transitions. */
const READABLE: ChartLayout = {
  rankdir: 'TB',
  mergeEdges: true,
  bundleGroups: true,
  fontSize: 12,
  nodesep: 0.4,
  ranksep: 0.3,
  labelWidth: 22,
};

/** `database.<key>` for each key. */
const db = (...keys: string[]): string[] => keys.map((k) => `database.${k}`);

/**
 * The database machine (packages/machines/src/machines/database.ts) as its lifecycle reads, top
 * to bottom: stopped (or crashed); bootstrap (initdb or a custom bootstrap) or a new replica
 * (base backup or pg_rewind); starting; running (and restarting); stopping. Each failure state sits
 * in a box with its siblings, so the commands the HA loop may send from any of them are drawn once.
 */
export const DATABASE_CHART_LAYOUT: ChartLayout = {
  ...READABLE,
  // The widest chart: larger type, closer neighbours, so that it stays readable scaled to a page.
  fontSize: 14,
  nodesep: 0.3,
  groups: [
    { id: 'down', label: 'stopped', members: db('stopped', 'crashed') },
    { id: 'bootstrap', label: 'bootstrap', members: [...db('initdb', 'custom_bootstrap', 'bootstrap_starting'), 'bootstrap_failed'] },
    { id: 'bootstrap_failed', label: 'failed', members: db('initdb_failed', 'custom_bootstrap_failed') },
    { id: 'replica', label: 'replica', members: db('creating_replica', 'starting') },
    { id: 'running', label: 'running', members: db('running', 'restarting') },
    { id: 'start_failed', label: 'start failed', members: db('start_failed', 'restart_failed') },
    { id: 'stopping', label: 'stopping', members: db('stopping', 'stop_failed') },
  ],
  ranks: [
    db('stopped', 'crashed'),
    db('initdb', 'custom_bootstrap', 'creating_replica'),
    db('initdb_failed', 'custom_bootstrap_failed', 'bootstrap_starting', 'starting'),
    db('running', 'start_failed', 'restart_failed'),
    db('restarting', 'stopping'),
    db('stop_failed'),
  ],
};

/**
 * A scheduled-operation machine (switchover, restart: packages/machines/src/machines/switchover.ts
 * and restart.ts share their shape), top to bottom: idle, scheduled, executing, and the three
 * outcomes in one box, which carries the transitions they share (a new request, a reset).
 */
export function scheduleChartLayout(machineId: string): ChartLayout {
  const s = (...keys: string[]): string[] => keys.map((k) => `${machineId}.${k}`);
  const groups: ChartGroup[] = [{ id: 'outcome', label: 'outcome', members: s('done', 'failed', 'cancelled') }];
  return { ...READABLE, groups, ranks: [s('idle'), s('scheduled'), s('executing'), s('done', 'cancelled'), s('failed')] };
}

/** Presets by machine id. */
const PRESETS: Record<string, ChartLayout> = {
  database: DATABASE_CHART_LAYOUT,
  switchover: scheduleChartLayout('switchover'),
  restart: scheduleChartLayout('restart'),
};

/** Every state id a layout names (groups and ranks). */
function namedStates(layout: ChartLayout): string[] {
  const groupIds = new Set((layout.groups ?? []).map((g) => g.id));
  const fromGroups = (layout.groups ?? []).flatMap((g) => g.members.filter((m) => !groupIds.has(m)));
  return [...fromGroups, ...(layout.ranks ?? []).flat()];
}

/**
 * The layout to draw a model with: this package's preset for a machine of that id when every
 * state the preset names is in the model, otherwise the generic readable layout (top to bottom,
 * one edge per pair of states), which fits any machine.
 */
export function chartLayoutOf(model: ChartModel): ChartLayout {
  const preset = PRESETS[model.id];
  if (preset) {
    const ids = new Set(model.states.map((s) => s.id));
    if (namedStates(preset).every((id) => ids.has(id))) return preset;
  }
  return READABLE;
}
