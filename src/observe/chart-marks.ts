/**
 * Marks on a drawn chart for the /ui page: the SVG classes of the current state, the states the
 * recent path passed and the edges it took. The page's stylesheet colours them (ui/app.css), so
 * the server's first paint and the script's live updates (ui/app.js, which toggles the same
 * classes) show the same chart without laying it out again.
 */
import { chartPath, type ChartModel, type ChartStep } from '@ha/machines';

/** What to mark on one machine's chart. */
export interface ChartMarks {
  /** Chart ids of the active states (ancestors included; the root is never marked). */
  active: readonly string[];
  /** Chart ids of the states the recent path passed through (its transitions' sources and targets). */
  visited: readonly string[];
  /** Indices into the model's transitions of the recent path, oldest first. */
  path: readonly number[];
}

/** How many of a machine's last transitions the page highlights as its path. */
export const PATH_STEPS = 5;

/**
 * The marks of a machine's chart from its state and its journaled transitions.
 * @param activeIds chart ids of the active states (GET /machines' `activeStates`; [] without a snapshot).
 * @param steps the machine's journaled transitions, oldest first; the last {@link PATH_STEPS} count.
 */
export function chartMarks(model: ChartModel, activeIds: readonly string[], steps: readonly ChartStep[]): ChartMarks {
  const path = chartPath(model, steps, PATH_STEPS);
  const visited = new Set<string>();
  for (const i of path) {
    const t = model.transitions[i]!;
    visited.add(t.source);
    for (const target of t.targets) visited.add(target);
  }
  visited.delete(model.id);
  const active = activeIds.filter((id) => id !== model.id);
  return { active, visited: [...visited], path };
}

/** Decodes the character references Graphviz writes in attribute values (`&#45;`, `&gt;`, `&amp;` …). */
function decodeAttr(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCharCode(parseInt(n, 16)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/**
 * Adds the marks as classes to a Graphviz SVG (as `toDot` ids them): `active` and `visited` on
 * the groups `id="state:<id>"`, `path` on the edges (`class="edge t<i> …"`) of the path's
 * transitions and `path-last` on the edge of its newest one. Classes a previous call added are
 * replaced. Everything else is left as it is.
 * @returns the SVG text with the classes set.
 */
export function markChartSvg(svg: string, marks: ChartMarks): string {
  const active = new Set(marks.active);
  const visited = new Set(marks.visited);
  const onPath = new Set(marks.path);
  const last = marks.path[marks.path.length - 1];
  return svg.replace(/<g id="([^"]*)" class="([^"]*)"/g, (whole, rawId: string, rawClass: string) => {
    const id = decodeAttr(rawId);
    const classes = rawClass.split(/\s+/).filter((c) => c !== '' && !['active', 'visited', 'path', 'path-last'].includes(c));
    if (id.startsWith('state:')) {
      const state = id.slice('state:'.length);
      if (active.has(state)) classes.push('active');
      else if (visited.has(state)) classes.push('visited');
    } else if (id.startsWith('edge:')) {
      const carried = classes.filter((c) => /^t\d+$/.test(c)).map((c) => Number(c.slice(1)));
      if (carried.some((i) => onPath.has(i))) classes.push('path');
      if (last !== undefined && carried.includes(last)) classes.push('path-last');
    } else {
      return whole;
    }
    return `<g id="${rawId}" class="${classes.join(' ')}"`;
  });
}
