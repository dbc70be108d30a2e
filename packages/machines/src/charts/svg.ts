/**
 * The `@ha/machines/svg` entry point: SVG from a {@link ChartModel}, rendered offline by Graphviz
 * compiled to WASM (@viz-js/viz, an optional peer dependency of the package: install it to use
 * this entry). Kept out of the main entry so that the machines load, and bundle, without it.
 * Runs in Node and in browsers alike.
 *
 * @packageDocumentation
 */
export type { ChartModel, ChartState, ChartStateType, ChartTransition } from './model.ts';
export type { DotOptions } from './dot.ts';
export type { ChartGroup, ChartLayout } from './layout.ts';
import type { Viz } from '@viz-js/viz';
import type { ChartModel } from './model.ts';
import { toDot, type DotOptions } from './dot.ts';

let vizPromise: Promise<Viz> | undefined;

/**
 * The shared Viz instance (the WASM module is compiled once per process, then cached). The module
 * (~1 MB of JS with the WASM inlined) is imported at the first render, not when the agent starts.
 */
function viz(): Promise<Viz> {
  vizPromise ??= import('@viz-js/viz')
    .then((m) => m.instance())
    .catch((err: unknown) => {
      vizPromise = undefined; // let a later call retry
      throw err;
    });
  return vizPromise;
}

/**
 * Render DOT text to an SVG document with the `dot` layout engine.
 * @returns SVG text (starts with `<?xml` or `<svg`).
 * @throws Error when Graphviz rejects the DOT (message lists Graphviz's errors).
 */
export async function dotToSvg(dot: string): Promise<string> {
  return (await viz()).renderString(dot, { format: 'svg', engine: 'dot' });
}

/**
 * Render a model as SVG: `toDot` (of the main entry) then Graphviz. Node/cluster/edge ids from the DOT
 * (`state:<id>`, `edge:<source>-><target>:<i>`) are kept as SVG `id` attributes.
 * @throws Error when Graphviz fails.
 */
export async function toSvg(model: ChartModel, opts: DotOptions = {}): Promise<string> {
  return dotToSvg(toDot(model, opts));
}
