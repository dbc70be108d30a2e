/** The GET /machines document: each observed machine's chart model, current state and context. */
import type { AnyStateMachine, StateValue } from 'xstate';
import { activeStateIds, chartModel, type ChartModel } from '@ha/machines';
import { stateName } from '@ha/machines';
import { jsonSafe } from './summary.ts';

/** A machine shown by the observe routes: its definition and a way to read its live snapshot. */
export interface ObservedMachine {
  /** Name used in URLs and in the journal's `machine` field (`database`, `switchover`, `restart`). */
  name: string;
  /** The machine definition (drawn as a chart). */
  machine: AnyStateMachine;
  /** The actor's current snapshot; undefined while the actor does not exist (not started yet). */
  snapshot: () => { value: unknown; context: unknown } | undefined;
}

/** One entry of GET /machines. */
export interface MachineDocument {
  name: string;
  /** The chart model (src/charts/model.ts): states and transitions. */
  definition: ChartModel;
  /** Flattened state name (`running`, `a.b` for nested states); null when there is no snapshot. */
  state: string | null;
  /** Ids of the active state nodes (chart ids: `database`, `database.running`). */
  activeStates: string[];
  /** JSON-safe context (bigint as text; functions and actor refs dropped); null without snapshot. */
  context: unknown;
}

const models = new WeakMap<AnyStateMachine, ChartModel>();

/** The chart model of a machine, built once per definition. */
export function cachedChartModel(machine: AnyStateMachine): ChartModel {
  let model = models.get(machine);
  if (!model) {
    model = chartModel(machine);
    models.set(machine, model);
  }
  return model;
}

/** Chart ids of the states active in `value` ([] when there is no value). */
export function activeIdsOf(machine: AnyStateMachine, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  return activeStateIds(machine.id, value as StateValue);
}

/** Describes one machine. Never throws for a well-formed snapshot. */
export function machineDocument(m: ObservedMachine): MachineDocument {
  const snap = m.snapshot();
  return {
    name: m.name,
    definition: cachedChartModel(m.machine),
    state: snap ? stateName(snap.value) : null,
    activeStates: snap ? activeIdsOf(m.machine, snap.value) : [],
    context: snap ? (jsonSafe(snap.context) ?? null) : null,
  };
}
