/**
 * The path a machine took: its last transitions, as journaled, matched to the chart's transitions
 * so that a drawing can highlight them (DOT `path`, the /ui page's `path` class).
 */
import type { ChartModel, ChartTransition } from './model.ts';

/** One step the machine took, as a journal `transition` entry records it. */
export interface ChartStep {
  /** The raw XState event type that caused it (`cmd.start`, `xstate.done.actor.start`). */
  event: string;
  /** Flattened state before: `running`, `a.b` for nested states, regions joined by `,`. */
  from: string;
  /** Flattened state after, same form. */
  to: string;
}

/**
 * Chart ids active in a flattened state name, ancestors included:
 * `('m', 'a.b,c.d')` → `['m', 'm.a', 'm.a.b', 'm.c', 'm.c.d']`; `''` gives `[machineId]`.
 */
export function activeIdsOfName(machineId: string, name: string): string[] {
  const out = new Set<string>([machineId]);
  for (const path of name.split(',')) {
    if (path === '') continue;
    let acc = machineId;
    for (const part of path.split('.')) {
      acc = `${acc}.${part}`;
      out.add(acc);
    }
  }
  return [...out];
}

/** Depth of a state id (number of dots). */
function depth(id: string): number {
  return id.split('.').length;
}

/**
 * The index in `model.transitions` of the transition a step took, or -1 when none fits. A
 * transition fits when it has the step's event type, is declared by a state active before (the
 * deepest first, as XState selects), and every target is active after. An eventless (`always`)
 * transition fits any event. Among transitions that differ only by guard, the first (XState's
 * priority order) is taken: the chart cannot tell which guard passed.
 */
export function stepTransition(model: ChartModel, step: ChartStep): number {
  const before = new Set(activeIdsOfName(model.id, step.from));
  const after = new Set(activeIdsOfName(model.id, step.to));
  const fits = (t: ChartTransition): boolean => before.has(t.source) && t.targets.length > 0 && t.targets.every((id) => after.has(id));
  let best = -1;
  for (const eventless of [false, true]) {
    model.transitions.forEach((t, i) => {
      if ((eventless ? t.eventType !== '' : t.eventType !== step.event) || !fits(t)) return;
      if (best === -1 || depth(t.source) > depth(model.transitions[best]!.source)) best = i;
    });
    if (best !== -1) return best;
  }
  return -1;
}

/**
 * The transitions of the last `limit` steps (oldest first), as indices into `model.transitions`;
 * steps that fit no transition are left out.
 * @param steps the machine's journaled transitions, oldest first.
 * @param limit how many of the newest steps to keep; default 5.
 */
export function chartPath(model: ChartModel, steps: readonly ChartStep[], limit = 5): number[] {
  return steps
    .slice(Math.max(0, steps.length - limit))
    .map((s) => stepTransition(model, s))
    .filter((i) => i >= 0);
}
