/**
 * State chart export for any XState v5 machine: Mermaid, DOT, SVG or JSON. See docs/charts.md.
 *
 * Everything here is plain string work on the machine's definition. SVG needs Graphviz: it lives
 * in its own entry point, `@ha/machines/svg` (svg.ts, with the optional peer dependency
 * @viz-js/viz), and reaches {@link renderChart} only through `opts.dotToSvg`, so that importing
 * the library never loads (nor makes a bundler resolve) the Graphviz module.
 */
import type { AnyStateMachine } from 'xstate';
import { chartModel } from './model.ts';
import { toMermaid } from './mermaid.ts';
import { toDot } from './dot.ts';
import { toJson } from './json.ts';
import type { ChartLayout } from './layout.ts';

export { chartModel, activeStateIds, guardLabel, transitionLabel } from './model.ts';
export type { ChartModel, ChartState, ChartStateType, ChartTransition } from './model.ts';
export { toMermaid, mermaidIds, mermaidText, type MermaidOptions } from './mermaid.ts';
export { toDot, anchorName, clusterName, groupClusterName, edgeClasses, HIGHLIGHT_FILL, PATH_COLOUR, type DotOptions } from './dot.ts';
export { toJson } from './json.ts';
export { drawnEdges, edgeLabelText, GROUP_PREFIX, type ChartGroup, type ChartLayout, type DrawnEdge } from './layout.ts';
export { chartLayoutOf, scheduleChartLayout, DATABASE_CHART_LAYOUT } from './layouts.ts';
export { chartPath, stepTransition, activeIdsOfName, type ChartStep } from './path.ts';

/** Output formats of {@link renderChart}. */
export const CHART_FORMATS = ['mermaid', 'dot', 'svg', 'json'] as const;
/** One of {@link CHART_FORMATS}. */
export type ChartFormat = (typeof CHART_FORMATS)[number];

/** Options of {@link renderChart}. */
export interface RenderChartOptions {
  /** State ids (dot paths like `'ha.primary.running'`) to highlight; ignored by `json`. */
  highlight?: readonly string[];
  /**
   * Transitions of the recent path (indices into the model's transitions, oldest first: see
   * `chartPath`), drawn in the path colour by `dot` and `svg`; ignored by the other formats.
   */
  path?: readonly number[];
  /**
   * How `dot` and `svg` lay the chart out; default `{}` (left to right, one edge per transition).
   * `chartLayoutOf(chartModel(machine))` gives the readable preset.
   */
  layout?: ChartLayout;
  /**
   * Renders DOT text to an SVG document; needed for the `svg` format only. Pass `dotToSvg` from
   * `@ha/machines/svg` (Graphviz compiled to WASM), or your own renderer.
   */
  dotToSvg?: (dot: string) => Promise<string>;
}

/** True when `s` is one of {@link CHART_FORMATS}. */
export function isChartFormat(s: string): s is ChartFormat {
  return (CHART_FORMATS as readonly string[]).includes(s);
}

/**
 * Render a machine's chart, generated from its definition.
 * @param machine any XState v5 machine.
 * @param format `'mermaid'` (stateDiagram-v2), `'dot'` (Graphviz), `'svg'` (the DOT laid out by
 *   `opts.dotToSvg`) or `'json'` (the {@link ChartModel}).
 * @returns the text, ending with a newline for the text formats.
 * @throws Error `unknown chart format` for any other format; for `svg`, Error `svg needs
 *   opts.dotToSvg` when it is missing, and whatever the renderer throws (Graphviz errors); for
 *   `dot` and `svg`, Error `chart layout: …` when `opts.layout`'s groups do not fit the machine.
 */
export async function renderChart(machine: AnyStateMachine, format: ChartFormat, opts: RenderChartOptions = {}): Promise<string> {
  const model = chartModel(machine);
  const highlight = opts.highlight ?? [];
  const dotOptions = { ...opts.layout, highlight, ...(opts.path ? { path: opts.path } : {}) };
  switch (format) {
    case 'mermaid':
      return toMermaid(model, { highlight });
    case 'dot':
      return toDot(model, dotOptions);
    case 'svg':
      if (opts.dotToSvg === undefined) {
        throw new Error("svg needs opts.dotToSvg: import { dotToSvg } from '@ha/machines/svg' (needs @viz-js/viz)");
      }
      return opts.dotToSvg(toDot(model, dotOptions));
    case 'json':
      return toJson(model);
    default:
      throw new Error(`unknown chart format: ${String(format)} (expected ${CHART_FORMATS.join('|')})`);
  }
}
