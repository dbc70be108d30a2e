/**
 * The observe routes: see into the machines. Mounted by the node's composition root with
 * `app.route('/', createObserveRoutes(deps))`. See docs/observability.md.
 *
 * - GET /machines                      chart model, state, active states and context of each machine
 * - GET /machines/:name/chart.<format> the chart (svg|dot|mermaid|json); `?highlight=1` marks the
 *                                      current state and the recent path, `?layout=readable|plain`
 *                                      and `?rankdir=LR|TB|auto` (svg, dot)
 * - GET /events                        journal entries, newest first (`?since=`, `?limit=`)
 * - GET /events/stream                 the journal as Server-Sent Events
 * - GET /ui (+ /ui/app.js, /ui/app.css) the live page, its charts drawn by the server (first paint
 *                                      without scripts); GET /ui/cluster the cluster document it shows
 */
import { Hono } from 'hono';
import type { AnyStateMachine } from 'xstate';
import { chartLayoutOf, isChartFormat, renderChart, toDot, type ChartFormat, type ChartStep } from '@ha/machines';
import { dotToSvg, toSvg } from '@ha/machines/svg';
import type { Journal } from '@ha/machines';
import { PATH_STEPS, chartMarks } from './chart-marks.ts';
import { streamJournal } from './event-stream.ts';
import { activeIdsOf, cachedChartModel, machineDocument, type ObservedMachine } from './machines-doc.ts';
import { parseLimit, parseSince } from './query.ts';
import { uiAsset } from './ui-assets.ts';
import { renderUiPage, type TransitionEntry } from './ui-page.ts';

export type { ObservedMachine, MachineDocument } from './machines-doc.ts';

/** What the observe routes read. */
export interface ObserveDeps {
  /** The node's journal (GET /events, GET /events/stream). */
  journal: Journal;
  /** The machines to show, in display order. */
  machines: () => ObservedMachine[];
  /** The cluster document (as GET /cluster answers it), shown by the page via GET /ui/cluster. */
  cluster: () => unknown;
  /** Clock, epoch ms (the `time` of GET /machines). Default Date.now. */
  now?: () => number;
  /** Interval of the SSE heartbeat comment; default 15 000 ms. */
  heartbeatMs?: number;
  /**
   * Lay out the page's charts in the background shortly after the routes are created (default
   * true), so the first visit to /ui does not wait for Graphviz (about 1–2 s of CPU when cold).
   */
  prewarmCharts?: boolean;
}

const CONTENT_TYPES: Record<ChartFormat, string> = {
  svg: 'image/svg+xml; charset=utf-8',
  dot: 'text/vnd.graphviz; charset=utf-8',
  mermaid: 'text/plain; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

/** Layout direction of a drawn chart; `auto` is LR unless that comes out much wider than tall. */
export type ChartDirection = 'LR' | 'TB' | 'auto';

/**
 * How a drawn chart is laid out: `readable` is the machine's preset (`chartLayoutOf`: lifecycle
 * groups, ranks, one edge per pair of states), `plain` one edge per transition (`toDot`'s default).
 */
export type ChartLayoutName = 'readable' | 'plain';

/** Width/height ratio of an LR layout above which `auto` switches to TB. */
const AUTO_MAX_RATIO = 3;

/** How many transitions the page lists, and reads from the journal for it. */
const PAGE_TRANSITIONS = 50;

/** Rendered charts by machine, format, layout, direction, highlight and path (SVG takes 50–400 ms to lay out). */
const chartCache = new WeakMap<AnyStateMachine, Map<string, Promise<string>>>();

/** What a drawn chart shows besides the machine: its layout, direction, highlighted states and path. */
interface ChartView {
  layout: ChartLayoutName;
  /** Undefined: the layout's own (`LR` for plain). */
  dir: ChartDirection | undefined;
  highlight: string[];
  path: number[];
}

function svgRatio(svg: string): number {
  const m = /<svg width="([\d.]+)pt" height="([\d.]+)pt"/.exec(svg);
  return m ? Number(m[1]) / Math.max(1, Number(m[2])) : 1;
}

async function drawChart(machine: AnyStateMachine, format: ChartFormat, view: ChartView): Promise<string> {
  const { highlight, path } = view;
  const model = cachedChartModel(machine);
  const base = view.layout === 'readable' ? chartLayoutOf(model) : {};
  const dir = view.dir ?? (view.layout === 'readable' ? undefined : 'LR');
  if (format !== 'svg' && format !== 'dot') return renderChart(machine, format, { highlight, path, dotToSvg });
  if (dir === 'auto') {
    // Decided on the un-highlighted LR layout (cached), so every highlight gets the same direction.
    const lr = await cachedChart(machine, 'svg', { ...view, dir: 'LR', highlight: [], path: [] });
    return cachedChart(machine, format, { ...view, dir: svgRatio(lr) > AUTO_MAX_RATIO ? 'TB' : 'LR' });
  }
  const opts = { ...base, ...(dir !== undefined ? { rankdir: dir } : {}), highlight, path };
  return format === 'svg' ? toSvg(model, opts) : toDot(model, opts);
}

function cachedChart(machine: AnyStateMachine, format: ChartFormat, view: ChartView): Promise<string> {
  let byKey = chartCache.get(machine);
  if (!byKey) chartCache.set(machine, (byKey = new Map()));
  const key = `${format}|${view.layout}|${view.dir ?? ''}|${view.highlight.join(',')}|${view.path.join(',')}`;
  let text = byKey.get(key);
  if (!text) {
    if (byKey.size >= 64) byKey.clear();
    text = drawChart(machine, format, view);
    text.catch(() => byKey.delete(key));
    byKey.set(key, text);
  }
  return text;
}

/** The page's chart of a machine: readable, nothing highlighted (the page marks it with classes). */
const PAGE_VIEW: ChartView = { layout: 'readable', dir: undefined, highlight: [], path: [] };

/** A machine's journaled transitions, oldest first, from newest-first journal entries. */
function stepsOf(entries: readonly TransitionEntry[], name: string): ChartStep[] {
  return entries.filter((e) => e.machine === name).reverse();
}

/** Builds the observe routes over `deps`. */
export function createObserveRoutes(deps: ObserveDeps): Hono {
  const app = new Hono();
  const now = deps.now ?? Date.now;
  const find = (name: string): ObservedMachine | undefined => deps.machines().find((m) => m.name === name);
  /** The journal's latest transitions, newest first (what the page lists and its paths come from). */
  const recentTransitions = (): TransitionEntry[] =>
    deps.journal.recent(Number.MAX_SAFE_INTEGER).filter((e): e is TransitionEntry => e.kind === 'transition');

  app.get('/machines', (c) => c.json({ time: new Date(now()).toISOString(), machines: deps.machines().map(machineDocument) }));

  app.get('/machines/:name', (c) => {
    const m = find(c.req.param('name'));
    return m ? c.json(machineDocument(m)) : c.json({ error: `no machine named '${c.req.param('name')}'` }, 404);
  });

  app.get('/machines/:name/:file', async (c) => {
    const name = c.req.param('name');
    const m = find(name);
    if (!m) return c.json({ error: `no machine named '${name}'` }, 404);
    const match = /^chart\.(\w+)$/.exec(c.req.param('file'));
    const format = match?.[1] ?? '';
    if (!isChartFormat(format)) return c.json({ error: 'expected chart.svg, chart.dot, chart.mermaid or chart.json' }, 404);
    const hl = c.req.query('highlight');
    const lit = hl === '1' || hl === 'true';
    const highlight = lit ? activeIdsOf(m.machine, m.snapshot()?.value) : [];
    const dir = c.req.query('rankdir');
    if (dir !== undefined && dir !== 'LR' && dir !== 'TB' && dir !== 'auto')
      return c.json({ error: 'rankdir must be LR, TB or auto', parameter: 'rankdir' }, 400);
    const layout = c.req.query('layout') ?? 'readable';
    if (layout !== 'readable' && layout !== 'plain') return c.json({ error: 'layout must be readable or plain', parameter: 'layout' }, 400);
    const path = lit ? [...chartMarks(cachedChartModel(m.machine), highlight, stepsOf(recentTransitions(), name)).path] : [];
    try {
      const text = await cachedChart(m.machine, format, { layout, dir, highlight, path });
      return c.body(text, 200, { 'Content-Type': CONTENT_TYPES[format], 'Cache-Control': 'no-cache' });
    } catch (e) {
      return c.json({ error: `chart rendering failed: ${(e as Error).message}` }, 500);
    }
  });

  app.get('/events', (c) => {
    const limit = parseLimit(c.req.query('limit'));
    if (!limit.ok) return c.json({ error: limit.error, parameter: 'limit' }, 400);
    const since = parseSince(c.req.query('since'));
    if (!since.ok) return c.json({ error: since.error, parameter: 'since' }, 400);
    return c.json({ events: deps.journal.recent(limit.value, since.value) });
  });

  app.get('/events/stream', (c) => {
    const header = c.req.header('Last-Event-ID');
    const since = header !== undefined && header !== '' ? parseSince(header, 'Last-Event-ID') : parseSince(c.req.query('since'));
    if (!since.ok) return c.json({ error: since.error, parameter: header ? 'Last-Event-ID' : 'since' }, 400);
    return streamJournal(c, deps.journal, {
      sinceSeq: since.value,
      ...(deps.heartbeatMs !== undefined ? { heartbeatMs: deps.heartbeatMs } : {}),
    });
  });

  app.get('/ui/cluster', (c) => c.json(deps.cluster() ?? null));
  /** The page asks for every chart: start laying them out early. */
  const prewarm = (): void => {
    for (const m of deps.machines()) cachedChart(m.machine, 'svg', PAGE_VIEW).catch(() => undefined);
  };
  if (deps.prewarmCharts ?? true) setTimeout(prewarm, 1000).unref();
  /** The page with its charts, transitions and cluster table as they are now (its first paint). */
  const page = async (): Promise<string> => {
    const transitions = recentTransitions();
    const charts = await Promise.all(
      deps.machines().map(async (m) => {
        const doc = machineDocument(m);
        const svg = await cachedChart(m.machine, 'svg', PAGE_VIEW).catch(() => undefined);
        const marks = chartMarks(doc.definition, doc.activeStates, stepsOf(transitions, m.name));
        return { name: m.name, state: doc.state, marks, ...(svg !== undefined ? { svg } : {}) };
      }),
    );
    return renderUiPage(uiAsset('index.html').text, {
      now: now(),
      charts,
      transitions: transitions.slice(0, PAGE_TRANSITIONS),
      cluster: deps.cluster() ?? null,
      pathSteps: PATH_STEPS,
    });
  };
  for (const path of ['/ui', '/ui/']) {
    app.get(path, async (c) =>
      c.body(await page(), 200, { 'Content-Type': uiAsset('index.html').contentType, 'Cache-Control': 'no-cache' }),
    );
  }
  app.get('/ui/app.js', (c) => serveAsset(c.body.bind(c), 'app.js'));
  app.get('/ui/app.css', (c) => serveAsset(c.body.bind(c), 'app.css'));

  return app;
}

type BodyFn = (data: string, status: 200, headers: Record<string, string>) => Response;

function serveAsset(body: BodyFn, name: 'app.js' | 'app.css'): Response {
  const asset = uiAsset(name);
  return body(asset.text, 200, { 'Content-Type': asset.contentType, 'Cache-Control': 'no-cache' });
}
