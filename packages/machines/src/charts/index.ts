/** State chart export for any XState v5 machine: Mermaid, DOT, SVG or JSON. See docs/charts.md. */
import type { AnyStateMachine } from 'xstate';
import { chartModel } from './model.ts';
import { toMermaid } from './mermaid.ts';
import { toDot } from './dot.ts';
import { toSvg } from './svg.ts';
import { toJson } from './json.ts';

export { chartModel, activeStateIds, guardLabel, transitionLabel } from './model.ts';
export type { ChartModel, ChartState, ChartStateType, ChartTransition } from './model.ts';
export { toMermaid, mermaidIds, mermaidText, type MermaidOptions } from './mermaid.ts';
export { toDot, anchorName, clusterName, type DotOptions } from './dot.ts';
export { toSvg, dotToSvg } from './svg.ts';
export { toJson } from './json.ts';

/** Output formats of {@link renderChart}. */
export const CHART_FORMATS = ['mermaid', 'dot', 'svg', 'json'] as const;
export type ChartFormat = (typeof CHART_FORMATS)[number];

/** Options of {@link renderChart}. */
export interface RenderChartOptions {
  /** State ids (dot paths like `'ha.primary.running'`) to highlight; ignored by `json`. */
  highlight?: readonly string[];
}

/** True when `s` is one of {@link CHART_FORMATS}. */
export function isChartFormat(s: string): s is ChartFormat {
  return (CHART_FORMATS as readonly string[]).includes(s);
}

/**
 * Render a machine's chart, generated from its definition.
 * @param machine any XState v5 machine.
 * @param format `'mermaid'` (stateDiagram-v2), `'dot'` (Graphviz), `'svg'` (Graphviz via WASM,
 *   offline) or `'json'` (the {@link ChartModel}).
 * @returns the text, ending with a newline for the text formats.
 * @throws Error `unknown chart format` for any other format; Graphviz errors for `svg`.
 */
export async function renderChart(
  machine: AnyStateMachine,
  format: ChartFormat,
  opts: RenderChartOptions = {},
): Promise<string> {
  const model = chartModel(machine);
  const highlight = opts.highlight ?? [];
  switch (format) {
    case 'mermaid':
      return toMermaid(model, { highlight });
    case 'dot':
      return toDot(model, { highlight });
    case 'svg':
      return toSvg(model, { highlight });
    case 'json':
      return toJson(model);
    default:
      throw new Error(`unknown chart format: ${String(format)} (expected ${CHART_FORMATS.join('|')})`);
  }
}
