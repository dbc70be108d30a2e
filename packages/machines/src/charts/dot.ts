/** Graphviz DOT text from a {@link ChartModel}, laid out as a {@link ChartLayout} says. */
import type { ChartModel, ChartState } from './model.ts';
import {
  GROUP_PREFIX,
  clusterStates,
  drawnEdges,
  edgeLabelText,
  indexGroups,
  isInsideState,
  type ChartLayout,
  type DrawnEdge,
} from './layout.ts';

/** Options for {@link toDot}: a layout, plus what to highlight. */
export interface DotOptions extends ChartLayout {
  /** State ids (dot paths, as in the model) to fill with the highlight colour. */
  highlight?: readonly string[];
  /**
   * Indices into `model.transitions` of the transitions the machine took last, oldest first (see
   * `chartPath`): their edges are drawn in `PATH_COLOUR` (#c2410c), thicker, and the states they
   * passed through get a border of that colour.
   */
  path?: readonly number[];
}

/** Fill colour of highlighted atomic/final states; clusters get {@link HIGHLIGHT_CLUSTER}. */
export const HIGHLIGHT_FILL = '#ff9966';
const HIGHLIGHT_CLUSTER = '#ffe0cc';
/** Colour of the edges of the recent path and of the border of the states it passed ({@link DotOptions.path}). */
export const PATH_COLOUR = '#c2410c';
/** Colour of a group's box and caption ({@link ChartLayout.groups}). */
const GROUP_COLOUR = '#8a96a3';

/** A double-quoted DOT string (`"` and `\` escaped, newlines as `\n`). */
function q(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** Name of the point node that anchors a compound/parallel state's cluster. */
export function anchorName(stateId: string): string {
  return `${stateId}#initial`;
}

/** Name of the cluster subgraph of a compound/parallel state. */
export function clusterName(stateId: string): string {
  return `cluster_${stateId}`;
}

/** Name of the cluster subgraph of a layout group ({@link ChartLayout.groups}). */
export function groupClusterName(groupId: string): string {
  return `cluster_${GROUP_PREFIX}${groupId}`;
}

/** The SVG class names of a drawn edge: `t<i>` for each transition it carries. */
export function edgeClasses(edge: Pick<DrawnEdge, 'transitions'>): string {
  return edge.transitions.map((i) => `t${i}`).join(' ');
}

/**
 * Render a model as a Graphviz `digraph`.
 * - Compound and parallel states (the root included) are `subgraph "cluster_<id>"` with a point
 *   node `"<id>#initial"`; for a compound state it has an edge to the initial child. Edges to or
 *   from a cluster attach to that point node with `lhead`/`ltail` (graph has `compound=true`).
 * - Atomic states are rounded boxes, final states double-bordered, history states ellipses
 *   labelled `key (H)` / `key (H*)`; invoked actors are extra label lines `invoke src`.
 * - Layout groups are dashed grey clusters `"cluster_group:<id>"` with `id="group:<id>"` inside
 *   their states' parent cluster; each of `ranks` becomes `{rank=same; …}` (with `newrank=true`),
 *   linked to the next by an invisible edge, and edges back to an earlier rank get `constraint=false`.
 * - Every node and cluster has `id="state:<id>"`. Each edge of {@link drawnEdges} has
 *   `id="edge:<source>-><target>:<i>"` (`i`: its first transition's index in `model.transitions`;
 *   `source` is `group:<id>` for an edge from a group's box), `class="t<i> t<j> …"` (every
 *   transition it carries) and a label `event [guard]` per transition. Targetless transitions are
 *   dashed self-loops labelled `... (internal)`.
 * @returns the DOT text, ending with a newline.
 * @throws Error `chart layout: …` when the layout's groups do not fit the model (`indexGroups`).
 */
export function toDot(model: ChartModel, opts: DotOptions = {}): string {
  const highlight = new Set(opts.highlight ?? []);
  const groups = indexGroups(model, opts.groups);
  const edges = drawnEdges(model, opts);
  const onPath = new Set(opts.path ?? []);
  const pathStates = new Set<string>();
  for (const i of onPath) {
    const t = model.transitions[i];
    if (!t) continue;
    pathStates.add(t.source);
    for (const target of t.targets) pathStates.add(target);
  }
  const byId = new Map(model.states.map((s) => [s.id, s] as const));
  const children = new Map<string, ChartState[]>();
  for (const s of model.states) {
    if (s.parent === undefined) continue;
    const list = children.get(s.parent) ?? [];
    list.push(s);
    children.set(s.parent, list);
  }
  const clusters = clusterStates(model);
  const isCluster = (s: ChartState | undefined): boolean => s !== undefined && clusters.has(s.id);
  const nodeOf = (id: string): string => (clusters.has(id) ? anchorName(id) : id);
  const fontSize = opts.fontSize ?? 11;

  const lines: string[] = [`digraph ${q(model.id)} {`, `  compound=true;`, `  rankdir=${opts.rankdir ?? 'LR'};`];
  const rankOf = new Map<string, number>();
  (opts.ranks ?? []).forEach((set, k) => set.forEach((id) => byId.has(id) && rankOf.set(id, k)));
  if (rankOf.size > 0) lines.push('  newrank=true;');
  if (opts.nodesep !== undefined) lines.push(`  nodesep=${opts.nodesep};`);
  if (opts.ranksep !== undefined) lines.push(`  ranksep=${opts.ranksep};`);
  lines.push(
    `  fontname="Helvetica"; fontsize=${fontSize + 1};`,
    `  node [shape=box, style=rounded, fontname="Helvetica", fontsize=${fontSize}];`,
    `  edge [fontname="Helvetica", fontsize=${fontSize - 1}];`,
  );

  const nodeLabel = (s: ChartState): string => {
    let text = s.key;
    if (s.type === 'history') text += s.history === 'deep' ? ' (H*)' : ' (H)';
    for (const src of s.invokes ?? []) text += `\ninvoke ${src}`;
    return text;
  };

  const emitted = new Set<string>();
  const emitGroup = (gid: string, depth: number): void => {
    if (emitted.has(`${GROUP_PREFIX}${gid}`)) return;
    emitted.add(`${GROUP_PREFIX}${gid}`);
    const g = groups.byId.get(gid)!;
    const pad = '  '.repeat(depth);
    lines.push(`${pad}subgraph ${q(groupClusterName(gid))} {`);
    lines.push(`${pad}  id=${q(`${GROUP_PREFIX}${gid}`)}; class="group";`);
    lines.push(`${pad}  label=${q(g.label)}; style="rounded,dashed"; color=${q(GROUP_COLOUR)}; fontcolor=${q(GROUP_COLOUR)};`);
    for (const m of g.members) {
      if (groups.byId.has(m)) emitGroup(m, depth + 1);
      else emit(byId.get(m)!, depth + 1);
    }
    lines.push(`${pad}}`);
  };
  /** The outermost group that holds `id` (a state or a group), if any. */
  const topGroup = (id: string): string | undefined => {
    let top: string | undefined;
    for (let g = groups.groupOf.get(id); g !== undefined; g = groups.groupOf.get(g)) top = g;
    return top;
  };

  const emit = (s: ChartState, depth: number): void => {
    if (emitted.has(s.id)) return;
    emitted.add(s.id);
    const pad = '  '.repeat(depth);
    const lit = highlight.has(s.id);
    const tooltip = s.description !== undefined ? `, tooltip=${q(s.description)}` : '';
    if (isCluster(s)) {
      lines.push(`${pad}subgraph ${q(clusterName(s.id))} {`);
      lines.push(`${pad}  id=${q(`state:${s.id}`)};`);
      lines.push(`${pad}  label=${q(nodeLabel(s) + (s.type === 'parallel' ? ' (parallel)' : ''))};`);
      lines.push(
        `${pad}  style=${q(lit ? 'rounded,filled' : s.type === 'parallel' ? 'rounded,dashed' : 'rounded')};` +
          (lit ? ` fillcolor=${q(HIGHLIGHT_CLUSTER)};` : ''),
      );
      if (s.description !== undefined) lines.push(`${pad}  tooltip=${q(s.description)};`);
      const anchor = anchorName(s.id);
      if (s.initial !== undefined) {
        lines.push(`${pad}  ${q(anchor)} [shape=point, width=0.12, label=""];`);
        const target = byId.get(s.initial);
        const lhead = isCluster(target) ? `, lhead=${q(clusterName(s.initial))}` : '';
        const head = isCluster(target) ? anchorName(s.initial) : s.initial;
        lines.push(`${pad}  ${q(anchor)} -> ${q(head)} [id=${q(`initial:${s.id}`)}${lhead}];`);
      } else {
        lines.push(`${pad}  ${q(anchor)} [shape=point, width=0.01, style=invis, label=""];`);
      }
      for (const k of children.get(s.id) ?? []) {
        const g = topGroup(k.id);
        if (g !== undefined) emitGroup(g, depth + 1);
        else emit(k, depth + 1);
      }
      lines.push(`${pad}}`);
    } else {
      const attrs: string[] = [`id=${q(`state:${s.id}`)}`, `label=${q(nodeLabel(s))}`];
      const styles = ['rounded'];
      if (s.type === 'final') attrs.push('peripheries=2');
      if (s.type === 'history') attrs.push('shape=ellipse');
      if (lit) {
        styles.push('filled');
        attrs.push(`fillcolor=${q(HIGHLIGHT_FILL)}`, 'penwidth=2');
      } else if (pathStates.has(s.id)) {
        attrs.push(`color=${q(PATH_COLOUR)}`, 'penwidth=2');
      }
      attrs.push(`style=${q(styles.join(','))}`);
      lines.push(`${pad}${q(s.id)} [${attrs.join(', ')}${tooltip}];`);
    }
  };
  const root = model.states[0];
  if (root) emit(root, 1);

  let previous: string | undefined;
  for (const set of opts.ranks ?? []) {
    const known = set.filter((id) => byId.has(id));
    if (known.length === 0) continue;
    lines.push(`  { rank=same; ${known.map((id) => q(nodeOf(id))).join('; ')}; }`);
    if (previous !== undefined) lines.push(`  ${q(previous)} -> ${q(nodeOf(known[0]!))} [style=invis];`);
    previous = nodeOf(known[0]!);
  }
  /** The listed rank of a drawn edge's end (a group: its first state's). */
  const rankOfEnd = (id: string): number | undefined =>
    rankOf.get(id.startsWith(GROUP_PREFIX) ? (groups.states.get(id.slice(GROUP_PREFIX.length))?.[0] ?? '') : id);

  for (const e of edges) {
    const id = `edge:${e.source}->${e.target}:${e.transitions[0]}`;
    const attrs: string[] = [`id=${q(id)}`, `label=${q(edgeLabelText(e.labels, opts.labelWidth))}`];
    let tail = e.source;
    let head = e.target;
    if (e.source.startsWith(GROUP_PREFIX)) {
      const gid = e.source.slice(GROUP_PREFIX.length);
      tail = nodeOf(groups.states.get(gid)?.[0] ?? e.target);
      attrs.push(`ltail=${q(groupClusterName(gid))}`);
    } else if (clusters.has(e.source)) {
      tail = anchorName(e.source);
      if (!isInsideState(e.target, e.source)) attrs.push(`ltail=${q(clusterName(e.source))}`);
    }
    if (clusters.has(e.target)) {
      head = anchorName(e.target);
      const from = e.source.startsWith(GROUP_PREFIX) ? tail : e.source;
      if (!isInsideState(from, e.target)) attrs.push(`lhead=${q(clusterName(e.target))}`);
    }
    if (e.internal) attrs.push('style=dashed');
    const from = rankOfEnd(e.source);
    const to = rankOfEnd(e.target);
    if (!e.internal && from !== undefined && to !== undefined && to <= from) attrs.push('constraint=false');
    if (e.transitions.some((i) => onPath.has(i))) attrs.push(`color=${q(PATH_COLOUR)}`, `fontcolor=${q(PATH_COLOUR)}`, 'penwidth=2.5');
    attrs.push(`class=${q(edgeClasses(e))}`);
    lines.push(`  ${q(tail)} -> ${q(head)} [${attrs.join(', ')}];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
