/**
 * Layout options of a drawn chart (DOT, SVG) and the plan of the edges to draw. Pure data work
 * on a {@link ChartModel}; dot.ts turns the plan into Graphviz text. See docs/charts.md "Layout".
 */
import type { ChartModel, ChartState, ChartTransition } from './model.ts';
import { transitionLabel } from './model.ts';

/**
 * A visual group: a labelled box around states that make one phase of a lifecycle (bootstrap,
 * running, stopping …). It is drawn only; the machine has no such state, and the chart model is
 * unchanged. Groups nest when a group names another group among its members.
 */
export interface ChartGroup {
  /** Unique among the groups of a layout. Drawn as the cluster `cluster_group:<id>` with `id="group:<id>"`. */
  id: string;
  /** Caption drawn at the top of the box. */
  label: string;
  /**
   * State ids (all children of one compound or parallel state) and ids of other groups (which
   * are then drawn inside this one). A state belongs to at most one group.
   */
  members: readonly string[];
}

/**
 * How a chart is laid out (Graphviz `dot`). Every field is optional: `{}` gives the plain layout
 * of {@link toDot} (left to right, one edge per transition and target). A machine's preset is
 * {@link chartLayoutOf}.
 */
export interface ChartLayout {
  /** Graph direction; default `'LR'`. */
  rankdir?: 'LR' | 'TB';
  /** Boxes around groups of states; see {@link ChartGroup}. */
  groups?: readonly ChartGroup[];
  /**
   * Ordered ranks (rows for `TB`, columns for `LR`): the states of `ranks[k]` are drawn side by
   * side on the k-th rank (Graphviz `rank=same`, `newrank=true`, and invisible edges from one
   * rank to the next). A transition to a state on the same or an earlier rank is then drawn
   * without constraining the ranking (`constraint=false`), so the ranks read as the lifecycle's
   * order and the ways back do not reorder it. States not listed are placed by Graphviz.
   */
  ranks?: readonly (readonly string[])[];
  /**
   * Draw one edge per (source, target) pair, its label listing every transition it carries, in
   * the machine's order, instead of one edge per transition. Default false.
   */
  mergeEdges?: boolean;
  /**
   * Draw a transition that every state of a group has alike (same event, guard and target outside
   * the group) once, from the group's box, as a statechart draws a superstate's transition.
   * Default false; needs `groups`.
   */
  bundleGroups?: boolean;
  /** Font size of state names, in points; edge labels are one point smaller. Default 11. */
  fontSize?: number;
  /** Graphviz `nodesep` (inches between neighbours on a rank). Default: Graphviz's (0.25). */
  nodesep?: number;
  /** Graphviz `ranksep` (inches between ranks). Default: Graphviz's (0.5). */
  ranksep?: number;
  /**
   * Wrap edge labels at this many characters: labels of a merged edge share a line while it
   * fits, and a longer label breaks before its guard (`edgeLabelText`). Default 0: one
   * transition label per line, never broken.
   */
  labelWidth?: number;
}

/** Prefix of a group's id where a drawn edge starts at a group: `group:<id>`. */
export const GROUP_PREFIX = 'group:';

/** One edge as drawn: from a state (or a group's box) to a state, carrying one or more transitions. */
export interface DrawnEdge {
  /** Id of the source state, or `group:<id>` when drawn from a group's box ({@link ChartLayout.bundleGroups}). */
  source: string;
  /** Id of the target state (the source for a targetless transition). */
  target: string;
  /** Indices into `model.transitions` of the transitions this edge carries, ascending. */
  transitions: number[];
  /** The distinct labels of those transitions (`transitionLabel`), in the same order. */
  labels: string[];
  /** True for a targetless (internal, actions-only) transition: a dashed self-loop. */
  internal: boolean;
}

/** A layout's groups, checked, with the lookups the renderers need. */
export interface GroupIndex {
  /** Groups by id. */
  byId: Map<string, ChartGroup>;
  /** The group that directly holds a state or a group, by member id. */
  groupOf: Map<string, string>;
  /** Every state id inside a group (nested groups included), by group id. */
  states: Map<string, string[]>;
  /** The compound or parallel state whose children a group holds, by group id. */
  parent: Map<string, string | undefined>;
}

/**
 * Checks the layout's groups against the model and indexes them.
 * @throws Error `chart layout: …` when a group id repeats or is a state id, a member is neither a
 *   state nor a group, a member is listed twice (in one group or in two), the groups nest in a
 *   cycle, or one group holds states of different parents.
 */
export function indexGroups(model: ChartModel, groups: readonly ChartGroup[] = []): GroupIndex {
  const stateById = new Map(model.states.map((s) => [s.id, s] as const));
  const byId = new Map<string, ChartGroup>();
  for (const g of groups) {
    if (byId.has(g.id) || stateById.has(g.id)) throw new Error(`chart layout: group id '${g.id}' is used twice`);
    byId.set(g.id, g);
  }
  const groupOf = new Map<string, string>();
  for (const g of groups) {
    for (const m of g.members) {
      if (!stateById.has(m) && !byId.has(m))
        throw new Error(`chart layout: group '${g.id}' names '${m}', which is neither a state of '${model.id}' nor a group`);
      if (groupOf.has(m)) throw new Error(`chart layout: '${m}' is in group '${groupOf.get(m)}' and in group '${g.id}'`);
      groupOf.set(m, g.id);
    }
  }
  const states = new Map<string, string[]>();
  const collect = (id: string, seen: string[]): string[] => {
    if (seen.includes(id)) throw new Error(`chart layout: groups nest in a cycle (${[...seen, id].join(' > ')})`);
    const known = states.get(id);
    if (known) return known;
    const out: string[] = [];
    for (const m of byId.get(id)?.members ?? []) {
      if (byId.has(m)) out.push(...collect(m, [...seen, id]));
      else out.push(m);
    }
    states.set(id, out);
    return out;
  };
  const parent = new Map<string, string | undefined>();
  for (const g of groups) {
    const inside = collect(g.id, []);
    const parents = new Set(inside.map((id) => stateById.get(id)?.parent));
    if (parents.size > 1) throw new Error(`chart layout: group '${g.id}' holds states of different parents (${[...parents].join(', ')})`);
    parent.set(g.id, inside.length > 0 ? stateById.get(inside[0]!)?.parent : undefined);
  }
  return { byId, groupOf, states, parent };
}

/** True when `id` is `ancestor` or a state nested in it (dot paths). */
export function isInsideState(id: string, ancestor: string): boolean {
  return id === ancestor || id.startsWith(`${ancestor}.`);
}

interface Item {
  index: number;
  source: string;
  target: string;
  internal: boolean;
  /** The signature a group's box carries it by (bundled items only). */
  bundle?: string;
}

/** Same event, guard and target: the transitions a group's box may carry for all its states. */
function signature(t: ChartTransition, target: string): string {
  return JSON.stringify([t.eventType, t.guard ?? null, target]);
}

/**
 * The edges to draw for a model under a layout.
 * - Without options: one edge per transition and target, in model order (what {@link toDot}
 *   always drew).
 * - `bundleGroups`: for each group, outermost first, a transition signature (event, guard,
 *   target outside the group) that every state of the group has becomes one edge from
 *   `group:<id>` carrying all of them.
 * - `mergeEdges`: edges with the same source, target and kind (internal or not) become one.
 * @returns edges ordered by their first transition index.
 * @throws Error as `indexGroups` does.
 */
export function drawnEdges(model: ChartModel, layout: ChartLayout = {}): DrawnEdge[] {
  let items: Item[] = [];
  model.transitions.forEach((t, index) => {
    const internal = t.targets.length === 0;
    for (const target of internal ? [t.source] : t.targets) items.push({ index, source: t.source, target, internal });
  });

  if (layout.bundleGroups && layout.groups && layout.groups.length > 0) {
    const groups = indexGroups(model, layout.groups);
    const depthOf = (id: string): number => {
      let d = 0;
      for (let g = groups.groupOf.get(id); g !== undefined; g = groups.groupOf.get(g)) d++;
      return d;
    };
    const order = [...groups.byId.keys()].sort((a, b) => depthOf(a) - depthOf(b));
    for (const gid of order) {
      const inside = groups.states.get(gid) ?? [];
      if (inside.length < 2) continue;
      const insideSet = new Set(inside);
      const isIn = (id: string): boolean => inside.some((s) => isInsideState(id, s));
      const sourcesBySig = new Map<string, Set<string>>();
      for (const it of items) {
        if (it.internal || !insideSet.has(it.source) || isIn(it.target)) continue;
        const sig = signature(model.transitions[it.index]!, it.target);
        const set = sourcesBySig.get(sig) ?? new Set<string>();
        set.add(it.source);
        sourcesBySig.set(sig, set);
      }
      const shared = new Set([...sourcesBySig].filter(([, set]) => set.size === inside.length).map(([sig]) => sig));
      if (shared.size === 0) continue;
      const bundled = new Map<string, Item[]>();
      const kept: Item[] = [];
      for (const it of items) {
        const sig = !it.internal && insideSet.has(it.source) ? signature(model.transitions[it.index]!, it.target) : '';
        if (shared.has(sig)) bundled.set(sig, [...(bundled.get(sig) ?? []), it]);
        else kept.push(it);
      }
      for (const list of bundled.values()) {
        for (const it of list)
          kept.push({ ...it, source: `${GROUP_PREFIX}${gid}`, bundle: signature(model.transitions[it.index]!, it.target) });
      }
      items = kept;
    }
  }

  const edges = new Map<string, DrawnEdge>();
  const out: DrawnEdge[] = [];
  for (const it of items) {
    const key = layout.mergeEdges
      ? JSON.stringify([it.source, it.target, it.internal])
      : it.bundle !== undefined
        ? JSON.stringify([it.source, it.bundle])
        : JSON.stringify([it.index, it.target]);
    let edge = edges.get(key);
    if (!edge) {
      edge = { source: it.source, target: it.target, transitions: [], labels: [], internal: it.internal };
      edges.set(key, edge);
      out.push(edge);
    }
    if (!edge.transitions.includes(it.index)) edge.transitions.push(it.index);
  }
  for (const e of out) {
    e.transitions.sort((a, b) => a - b);
    const labels: string[] = [];
    for (const i of e.transitions) {
      const label = transitionLabel(model.transitions[i]!);
      if (!labels.includes(label)) labels.push(label);
    }
    e.labels = labels;
  }
  return out.sort((a, b) => a.transitions[0]! - b.transitions[0]!);
}

/**
 * The label text of a drawn edge: its labels one per line; with `width > 0`, labels are joined by
 * `, ` while a line stays within `width` characters, and a label longer than `width` breaks
 * before its guard (`switchover.requested` / `[requestDueNow]`).
 */
export function edgeLabelText(labels: readonly string[], width = 0): string {
  if (width <= 0) return labels.join('\n');
  const lines: string[] = [];
  for (const l of labels) {
    const last = lines[lines.length - 1];
    const guard = l.indexOf(' [');
    if (l.length > width && guard > 0) lines.push(l.slice(0, guard), l.slice(guard + 1));
    else if (last !== undefined && !last.startsWith('[') && last.length + 2 + l.length <= width) lines[lines.length - 1] = `${last}, ${l}`;
    else lines.push(l);
  }
  return lines.join('\n');
}

/** The states of a model that have children (drawn as clusters). */
export function clusterStates(model: ChartModel): Set<string> {
  return new Set(model.states.map((s: ChartState) => s.parent).filter((p): p is string => p !== undefined));
}
