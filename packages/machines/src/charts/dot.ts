/** Graphviz DOT text from a {@link ChartModel}. */
import type { ChartModel, ChartState } from './model.ts';
import { transitionLabel } from './model.ts';

/** Options for {@link toDot}. */
export interface DotOptions {
  /** State ids (dot paths, as in the model) to fill with the highlight colour. */
  highlight?: readonly string[];
  /** Graph direction; default `'LR'`. */
  rankdir?: 'LR' | 'TB';
}

/** Fill colour of highlighted atomic/final states; clusters get {@link HIGHLIGHT_CLUSTER}. */
export const HIGHLIGHT_FILL = '#ff9966';
const HIGHLIGHT_CLUSTER = '#ffe0cc';

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

/**
 * Render a model as a Graphviz `digraph`.
 * - Compound and parallel states (the root included) are `subgraph "cluster_<id>"` with a point
 *   node `"<id>#initial"`; for a compound state it has an edge to the initial child. Edges to or
 *   from a cluster attach to that point node with `lhead`/`ltail` (graph has `compound=true`).
 * - Atomic states are rounded boxes, final states double-bordered, history states ellipses
 *   labelled `key (H)` / `key (H*)`; invoked actors are extra label lines `invoke src`.
 * - Every node and cluster has `id="state:<id>"`; transition `i` (index in `model.transitions`)
 *   gives one edge per target with `id="edge:<source>-><target>:<i>"` and label `event [guard]`.
 *   Targetless transitions are dashed self-loops labelled `... (internal)`.
 * @returns the DOT text, ending with a newline.
 */
export function toDot(model: ChartModel, opts: DotOptions = {}): string {
  const highlight = new Set(opts.highlight ?? []);
  const byId = new Map(model.states.map((s) => [s.id, s] as const));
  const children = new Map<string, ChartState[]>();
  for (const s of model.states) {
    if (s.parent === undefined) continue;
    const list = children.get(s.parent) ?? [];
    list.push(s);
    children.set(s.parent, list);
  }
  const isCluster = (s: ChartState | undefined): boolean =>
    s !== undefined && (children.get(s.id)?.length ?? 0) > 0;
  const isInside = (id: string, ancestor: string): boolean => id === ancestor || id.startsWith(`${ancestor}.`);

  const lines: string[] = [
    `digraph ${q(model.id)} {`,
    `  compound=true;`,
    `  rankdir=${opts.rankdir ?? 'LR'};`,
    `  fontname="Helvetica"; fontsize=12;`,
    `  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];`,
    `  edge [fontname="Helvetica", fontsize=10];`,
  ];

  const nodeLabel = (s: ChartState): string => {
    let text = s.key;
    if (s.type === 'history') text += s.history === 'deep' ? ' (H*)' : ' (H)';
    for (const src of s.invokes ?? []) text += `\ninvoke ${src}`;
    return text;
  };

  const emit = (s: ChartState, depth: number): void => {
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
      for (const k of children.get(s.id) ?? []) emit(k, depth + 1);
      lines.push(`${pad}}`);
    } else {
      const attrs: string[] = [`id=${q(`state:${s.id}`)}`, `label=${q(nodeLabel(s))}`];
      const styles = ['rounded'];
      if (s.type === 'final') attrs.push('peripheries=2');
      if (s.type === 'history') attrs.push('shape=ellipse');
      if (lit) {
        styles.push('filled');
        attrs.push(`fillcolor=${q(HIGHLIGHT_FILL)}`, 'penwidth=2');
      }
      attrs.push(`style=${q(styles.join(','))}`);
      lines.push(`${pad}${q(s.id)} [${attrs.join(', ')}${tooltip}];`);
    }
  };
  const root = model.states[0];
  if (root) emit(root, 1);

  model.transitions.forEach((t, i) => {
    const internal = t.targets.length === 0;
    for (const target of internal ? [t.source] : t.targets) {
      const src = byId.get(t.source);
      const dst = byId.get(target);
      const attrs: string[] = [`id=${q(`edge:${t.source}->${target}:${i}`)}`, `label=${q(transitionLabel(t))}`];
      let tail = t.source;
      let head = target;
      if (isCluster(src)) {
        tail = anchorName(t.source);
        if (!isInside(target, t.source)) attrs.push(`ltail=${q(clusterName(t.source))}`);
      }
      if (isCluster(dst)) {
        head = anchorName(target);
        if (!isInside(t.source, target)) attrs.push(`lhead=${q(clusterName(target))}`);
      }
      if (internal) attrs.push('style=dashed');
      lines.push(`  ${q(tail)} -> ${q(head)} [${attrs.join(', ')}];`);
    }
  });
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
