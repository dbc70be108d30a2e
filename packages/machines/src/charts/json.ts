/** JSON text of a {@link ChartModel}. */
import type { ChartModel } from './model.ts';

/**
 * Pretty JSON (2-space indent, trailing newline) of the chart model; `JSON.parse` gives back an
 * equal {@link ChartModel}. The raw `machine.definition` is deliberately not included: it holds
 * functions and XState internals, the model is the stable contract.
 */
export function toJson(model: ChartModel): string {
  return `${JSON.stringify(model, null, 2)}\n`;
}
