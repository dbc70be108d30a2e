/**
 * The /ui page as the server sends it: the template (ui/index.html) filled with what the page
 * shows at load, so that its first paint, scripts or not, already holds the state charts (as
 * SVG, the current state and the recent path marked), the latest transitions and the cluster
 * table. The script (ui/app.js) then keeps them live. See docs/observability.md "The page".
 */
import type { JournalEntry } from '@ha/machines';
import { markChartSvg, type ChartMarks } from './chart-marks.ts';

/** One machine's chart as the page shows it at load. */
export interface UiPageChart {
  /** The machine's name (`database`, `switchover`, `restart`). */
  name: string;
  /** Its flattened state name; null without a snapshot. */
  state: string | null;
  /** The drawn chart (Graphviz SVG); undefined when it could not be drawn (the script fetches it). */
  svg?: string;
  /** What to mark on it. */
  marks: ChartMarks;
}

/** A journal `transition` entry. */
export type TransitionEntry = Extract<JournalEntry, { kind: 'transition' }>;

/** Everything the page shows at load. */
export interface UiPageData {
  /** When this snapshot was taken, epoch ms. */
  now: number;
  /** The charts, in display order. */
  charts: readonly UiPageChart[];
  /** The latest transitions, newest first. */
  transitions: readonly TransitionEntry[];
  /** The cluster document (GET /cluster's shape; anything else shows "no members"). */
  cluster: unknown;
  /** How many of a machine's last transitions its path shows (the legend says it). */
  pathSteps: number;
}

/** Text as HTML (`&`, `<`, `>`, `"`, `'` escaped). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The `<svg …>…</svg>` element of an SVG document (the XML prolog, doctype and leading comments dropped). */
export function svgElement(svg: string): string {
  const start = svg.indexOf('<svg');
  return (start >= 0 ? svg.slice(start) : svg).trimEnd();
}

/** `HH:MM:SS.mmm` (UTC) of an ISO time, as the page's list shows it before the script redraws it in local time. */
function timeOf(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(11, 23);
}

function chartSection(c: UiPageChart): string {
  const name = escapeHtml(c.name);
  const state = escapeHtml(c.state ?? '');
  const svg = c.svg !== undefined ? svgElement(markChartSvg(c.svg, c.marks)) : '';
  return [
    `    <section class="chart" id="chart-${name}" data-machine="${name}" data-state="${state}">`,
    `      <h2>${name} <span class="state">${state}</span></h2>`,
    `      <div class="svg" aria-label="${name} state chart">${svg}</div>`,
    `    </section>`,
  ].join('\n');
}

function transitionItem(e: TransitionEntry): string {
  const reason = e.reason ? `<span class="t-reason">${escapeHtml(e.reason)}</span>` : '';
  return (
    `<li data-seq="${e.seq}"><span class="t-time" title="${escapeHtml(e.time)}">${escapeHtml(timeOf(e.time))}</span>` +
    `<span class="t-machine">${escapeHtml(e.machine)}</span>: ${escapeHtml(e.from)} → ${escapeHtml(e.to)} ` +
    `<span class="t-event">(${escapeHtml(e.event)})</span>${reason}</li>`
  );
}

/** A member's lag as the page shows it (bytes, KiB, MiB; '–' when a replica reports none). */
function lagText(m: Record<string, unknown>): string {
  const lag = m['lag'] ?? m['replay_lag'] ?? m['receive_lag'];
  if (lag === undefined) return m['role'] === 'leader' ? '' : '–';
  if (typeof lag !== 'number') return String(lag);
  if (lag < 1024) return `${lag} B`;
  if (lag < 1024 * 1024) return `${(lag / 1024).toFixed(1)} KiB`;
  return `${(lag / 1024 / 1024).toFixed(1)} MiB`;
}

function text(v: unknown): string {
  return v === undefined || v === null ? '' : escapeHtml(String(v));
}

/** The cluster table's rows, its scope and its notes (paused, a scheduled switchover). */
function clusterParts(doc: unknown): { rows: string; scope: string; notes: string } {
  const d = (typeof doc === 'object' && doc !== null ? doc : {}) as Record<string, unknown>;
  const members = Array.isArray(d['members']) ? (d['members'] as Record<string, unknown>[]) : [];
  const notes: string[] = [];
  if (d['pause']) notes.push('paused');
  const s = d['scheduled_switchover'] as Record<string, unknown> | undefined;
  if (s)
    notes.push(
      `switchover scheduled at ${String(s['at'])}${s['from'] ? ` from ${String(s['from'])}` : ''}${s['to'] ? ` to ${String(s['to'])}` : ''}`,
    );
  const rows =
    members.length === 0
      ? '<tr><td colspan="6" class="muted">no members</td></tr>'
      : members
          .map(
            (m) =>
              `<tr data-member="${text(m['name'])}"><td>${text(m['name'])}</td><td class="role-${text(m['role'])}">${text(m['role'])}</td>` +
              `<td>${text(m['state'])}</td><td>${escapeHtml(lagText(m))}</td><td>${text(m['timeline'])}</td>` +
              `<td class="muted">${m['host'] !== undefined ? `${text(m['host'])}:${text(m['port'])}` : ''}</td></tr>`,
          )
          .join('');
  return { rows, scope: text(d['scope']), notes: escapeHtml(notes.join(' · ')) };
}

/**
 * Fills the page template: the markers `<!--charts-->`, `<!--transitions-->`,
 * `<!--cluster-members-->`, `<!--cluster-scope-->`, `<!--cluster-notes-->`, `<!--as-of-->` and
 * `<!--path-steps-->` of ui/index.html. Every text is HTML-escaped; the SVG is Graphviz's.
 */
export function renderUiPage(template: string, data: UiPageData): string {
  const cluster = clusterParts(data.cluster);
  const parts: Record<string, string> = {
    charts: data.charts.map(chartSection).join('\n'),
    transitions: data.transitions.map(transitionItem).join(''),
    'cluster-members': cluster.rows,
    'cluster-scope': cluster.scope,
    'cluster-notes': cluster.notes,
    'as-of': `as of ${escapeHtml(new Date(data.now).toISOString().slice(11, 19))} UTC`,
    'path-steps': String(data.pathSteps),
  };
  return template.replace(/<!--([a-z-]+)-->/g, (whole, key: string) => parts[key] ?? whole);
}
