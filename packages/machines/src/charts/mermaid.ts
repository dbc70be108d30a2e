/** Mermaid `stateDiagram-v2` text from a {@link ChartModel}. */
import type { ChartModel, ChartState } from './model.ts';
import { transitionLabel } from './model.ts';

/** Options for {@link toMermaid}. */
export interface MermaidOptions {
  /** State ids (dot paths, as in the model) to mark with `classDef current`. */
  highlight?: readonly string[];
}

/**
 * Map state ids (dot paths) to unique Mermaid ids: every character outside `[A-Za-z0-9_]` becomes
 * `_`; a clash gets a numeric suffix (`a_b`, `a_b_2`).
 */
export function mermaidIds(model: ChartModel): Map<string, string> {
  const out = new Map<string, string>();
  const used = new Set<string>();
  for (const s of model.states) {
    const base = `s_${s.id.replace(/[^A-Za-z0-9_]/g, '_')}`;
    let candidate = base;
    for (let n = 2; used.has(candidate); n++) candidate = `${base}_${n}`;
    used.add(candidate);
    out.set(s.id, candidate);
  }
  return out;
}

/** Quote-safe label text for `state "label" as id`. */
function label(s: ChartState): string {
  let text = s.key;
  if (s.type === 'history') text += s.history === 'deep' ? ' (H*)' : ' (H)';
  return text.replace(/"/g, '#quot;');
}

/**
 * Text after ` : ` (transition labels, state descriptions). Mermaid's lexer reads that text as
 * `":"[^:\n;]+`, so `:` and `;` become the entity codes `#58;` and `#59;` (decoded when Mermaid
 * renders), and newlines become spaces: `'done: x'` → `'done#58; x'`.
 */
export function mermaidText(t: string): string {
  return t.replace(/[:;\n]/g, (c) => (c === ':' ? '#58;' : c === ';' ? '#59;' : ' '));
}

/**
 * Render a model as Mermaid `stateDiagram-v2`.
 * - Every state is declared `state "key" as s_<path>`; compound and parallel states (and the root)
 *   are blocks `{ ... }` opening with `[*] --> initial`; regions of a parallel state are separated
 *   by `--`; a final state gets `x --> [*]`.
 * - Invoked actors appear as a description line `s_x : invoke src`.
 * - Transitions come last, one line per target: `s_a --> s_b : event [guard]`; a targetless
 *   transition is a self-loop labelled `... (internal)`.
 * @returns the diagram text, lines joined with `\n`, ending with a newline.
 */
export function toMermaid(model: ChartModel, opts: MermaidOptions = {}): string {
  const ids = mermaidIds(model);
  const mid = (id: string): string => ids.get(id) ?? `s_${id.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const children = new Map<string, ChartState[]>();
  for (const s of model.states) {
    if (s.parent === undefined) continue;
    const list = children.get(s.parent) ?? [];
    list.push(s);
    children.set(s.parent, list);
  }
  const lines: string[] = ['stateDiagram-v2'];
  const emit = (s: ChartState, depth: number): void => {
    const pad = '  '.repeat(depth);
    const kids = children.get(s.id) ?? [];
    if (kids.length === 0) {
      lines.push(`${pad}state "${label(s)}" as ${mid(s.id)}`);
    } else {
      lines.push(`${pad}state "${label(s)}" as ${mid(s.id)} {`);
      if (s.initial !== undefined) lines.push(`${pad}  [*] --> ${mid(s.initial)}`);
      kids.forEach((k, i) => {
        if (s.type === 'parallel' && i > 0) lines.push(`${pad}  --`);
        emit(k, depth + 1);
      });
      lines.push(`${pad}}`);
    }
    for (const src of s.invokes ?? []) lines.push(`${pad}${mid(s.id)} : ${mermaidText(`invoke ${src}`)}`);
    if (s.type === 'final') lines.push(`${pad}${mid(s.id)} --> [*]`);
  };
  const root = model.states[0];
  if (root) {
    lines.push(`  [*] --> ${mid(root.id)}`);
    emit(root, 1);
  }
  for (const t of model.transitions) {
    const targets = t.targets.length > 0 ? t.targets : [t.source];
    for (const target of targets) {
      lines.push(`  ${mid(t.source)} --> ${mid(target)} : ${mermaidText(transitionLabel(t))}`);
    }
  }
  const highlight = (opts.highlight ?? []).filter((id) => ids.has(id));
  if (highlight.length > 0) {
    lines.push('  classDef current fill:#f96,stroke:#333,stroke-width:2px');
    for (const id of highlight) lines.push(`  class ${mid(id)} current`);
  }
  return `${lines.join('\n')}\n`;
}
