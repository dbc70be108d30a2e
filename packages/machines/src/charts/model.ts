/**
 * A plain, JSON-serialisable description of an XState v5 machine's chart, built by walking
 * `machine.root` (see docs/charts.md). Every renderer (Mermaid, DOT, SVG, JSON) reads only this.
 */
import { and, not, or, stateIn } from 'xstate';
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition, StateValue } from 'xstate';

/** Kind of a state node, as XState names it. */
export type ChartStateType = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';

/** One state node. The root node is included (id = machine id, no parent). */
export interface ChartState {
  /** Full path, dot-joined, starting with the machine id: `'ha.primary.running'`. Unique. */
  id: string;
  /** The state's own key (`'running'`); for the root, the machine id. */
  key: string;
  /** Id of the parent state; absent only for the root. */
  parent?: string;
  /** What kind of state node it is. */
  type: ChartStateType;
  /** Id of the initial child (compound states only). */
  initial?: string;
  /** `'shallow'` or `'deep'` (history states only). */
  history?: 'shallow' | 'deep';
  /** The state's tags (e.g. `'execute'`), as defined. */
  tags?: string[];
  /** `src` names of the actors invoked while in this state (`'inline'` for inline logic). */
  invokes?: string[];
  /** The state's `description`, as defined. */
  description?: string;
}

/** One transition, as written in the machine (one entry per candidate, in priority order). */
export interface ChartTransition {
  /** Id of the state that declares the transition. */
  source: string;
  /** Ids of the target states; empty for a targetless (internal, actions-only) transition. */
  targets: string[];
  /**
   * Readable event label: the event type (`'pg.crashed'`), `'always'` for eventless,
   * `'after <delayName>'` / `'after <n>ms'` for delayed, `'done: <invokeId>'` /
   * `'error: <invokeId>'` for invoke results, `'onDone'` for a state's own done event.
   */
  event: string;
  /** Raw XState event type (`'xstate.after.wait.m.a'`, `''` for `always`). */
  eventType: string;
  /** Guard label: its name, `'guard'` for an inline function, `!x`, `a && b`, `a || b`, `in(x)`. */
  guard?: string;
  /** Action names (`'assign'` etc. for built-ins, `'action'` for inline functions). */
  actions?: string[];
  /** True when the transition re-enters its source (`reenter: true`). */
  reenter?: boolean;
}

/** The whole chart. `states[0]` is the root; parents always come before their children. */
export interface ChartModel {
  /** The machine id. */
  id: string;
  /** Every state node, the root first, then depth-first in definition order. */
  states: ChartState[];
  /** Every transition, in definition order. */
  transitions: ChartTransition[];
}

type GuardFn = ((...args: never[]) => unknown) & {
  check?: unknown;
  guards?: unknown[];
  stateValue?: unknown;
};

// Higher-order guards are functions carrying a `check` implementation; compare with the real ones.
const NOT_CHECK = (not('x') as unknown as GuardFn).check;
const AND_CHECK = (and(['x']) as unknown as GuardFn).check;
const OR_CHECK = (or(['x']) as unknown as GuardFn).check;
const STATE_IN_CHECK = (stateIn('x') as unknown as GuardFn).check;

function parenthesise(label: string): string {
  return /\s/.test(label) ? `(${label})` : label;
}

/** Readable label of a guard (string, `{ type }`, inline function, or not/and/or/stateIn). */
export function guardLabel(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const g = guard as GuardFn;
    const inner = (g.guards ?? []).map((x) => parenthesise(guardLabel(x) ?? 'guard'));
    if (g.check === NOT_CHECK) return `!${inner[0] ?? 'guard'}`;
    if (g.check === AND_CHECK) return inner.join(' && ');
    if (g.check === OR_CHECK) return inner.join(' || ');
    if (g.check === STATE_IN_CHECK) {
      const v = g.stateValue;
      return `in(${typeof v === 'string' ? v : stateValuePaths(v as StateValue).join(',')})`;
    }
    return 'guard';
  }
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') {
    return (guard as { type: string }).type;
  }
  return 'guard';
}

function actionLabel(action: unknown): string {
  if (typeof action === 'string') return action;
  if (typeof action === 'function') {
    const type = (action as { type?: unknown }).type;
    if (typeof type === 'string') return type.replace(/^xstate\./, '');
    return 'action';
  }
  if (action && typeof action === 'object' && typeof (action as { type?: unknown }).type === 'string') {
    return (action as { type: string }).type;
  }
  return 'action';
}

/** Leaf paths of a state value: `{ a: { b: 'c' }, d: 'e' }` → `['a.b.c', 'd.e']`. */
function stateValuePaths(value: StateValue): string[] {
  if (typeof value === 'string') return [value];
  const out: string[] = [];
  for (const [key, sub] of Object.entries(value)) {
    if (sub === undefined) continue;
    const subPaths = stateValuePaths(sub);
    if (subPaths.length === 0) out.push(key);
    for (const p of subPaths) out.push(`${key}.${p}`);
  }
  return out;
}

function eventLabel(t: AnyTransitionDefinition, sourceNodeId: string): string {
  const type = String(t.eventType);
  if (type === '') return 'always';
  const delay = (t as { delay?: unknown }).delay;
  if (type.startsWith('xstate.after.')) {
    if (typeof delay === 'number') return `after ${delay}ms`;
    if (typeof delay === 'string') return /^\d+$/.test(delay) ? `after ${delay}ms` : `after ${delay}`;
    return 'after';
  }
  if (type.startsWith('xstate.done.actor.')) return `done: ${type.slice('xstate.done.actor.'.length)}`;
  if (type.startsWith('xstate.error.actor.')) return `error: ${type.slice('xstate.error.actor.'.length)}`;
  if (type === `xstate.done.state.${sourceNodeId}`) return 'onDone';
  if (type.startsWith('xstate.done.state.')) return `done: ${type.slice('xstate.done.state.'.length)}`;
  return type;
}

/**
 * Describe a machine's chart from its definition (no actor is started).
 * @param machine any XState v5 machine (`setup(...).createMachine(...)` or `createMachine(...)`).
 * @returns states in document order (root first, parents before children) and every transition
 *   declared by each state, including root-level `on`, `always`, `after`, invoke `onDone`/`onError`.
 * @throws nothing of its own; XState may throw while resolving an invalid target.
 */
export function chartModel(machine: AnyStateMachine): ChartModel {
  const root = machine.root as AnyStateNode;
  const ids = new Map<AnyStateNode, string>();
  const order: AnyStateNode[] = [];
  const collect = (node: AnyStateNode): void => {
    ids.set(node, [machine.id, ...node.path].join('.'));
    order.push(node);
    for (const child of Object.values(node.states) as AnyStateNode[]) collect(child);
  };
  collect(root);
  const idOf = (node: AnyStateNode): string => ids.get(node) ?? [machine.id, ...node.path].join('.');

  const states: ChartState[] = [];
  const transitions: ChartTransition[] = [];
  for (const node of order) {
    const id = idOf(node);
    const state: ChartState = { id, key: node.parent ? node.key : machine.id, type: node.type };
    if (node.parent) state.parent = idOf(node.parent);
    if (node.type === 'compound') {
      const first = node.initial?.target?.[0];
      if (first) state.initial = idOf(first);
    }
    if (node.type === 'history' && node.history) state.history = node.history;
    if (node.tags.length > 0) state.tags = [...node.tags];
    const invokes = node.invoke.map((inv) => (typeof inv.src === 'string' ? inv.src : 'inline'));
    if (invokes.length > 0) state.invokes = invokes;
    if (node.description) state.description = node.description;
    states.push(state);

    const defs: AnyTransitionDefinition[] = [];
    for (const list of node.transitions.values()) defs.push(...list);
    defs.push(...(node.always ?? []));
    for (const t of defs) {
      const tr: ChartTransition = {
        source: id,
        targets: (t.target ?? []).map((n) => idOf(n as AnyStateNode)),
        event: eventLabel(t, node.id),
        eventType: String(t.eventType),
      };
      const g = guardLabel(t.guard);
      if (g !== undefined) tr.guard = g;
      if (t.actions.length > 0) tr.actions = t.actions.map(actionLabel);
      if (t.reenter) tr.reenter = true;
      transitions.push(tr);
    }
  }
  return { id: machine.id, states, transitions };
}

/**
 * Ids (as in {@link ChartState.id}) of the states that are active for a state value, ancestors
 * included: `('ha', { primary: 'running' })` → `['ha', 'ha.primary', 'ha.primary.running']`.
 * Useful as the `highlight` option of the renderers.
 */
export function activeStateIds(machineId: string, value: StateValue): string[] {
  const out = new Set<string>([machineId]);
  for (const path of stateValuePaths(value)) {
    let acc = machineId;
    for (const part of path.split('.')) {
      acc = `${acc}.${part}`;
      out.add(acc);
    }
  }
  return [...out];
}

/** Label of a transition as drawn on an edge: `event [guard]`, plus ` (internal)` when targetless. */
export function transitionLabel(t: ChartTransition): string {
  let label = t.event;
  if (t.guard !== undefined) label += ` [${t.guard}]`;
  if (t.targets.length === 0) label += ' (internal)';
  return label;
}
