/** The marks the /ui page sets on a drawn chart (chart-marks.ts) and the page's server-side HTML (ui-page.ts). */
import { describe, expect, it } from 'vitest';
import { chartLayoutOf, chartModel, databaseMachine } from '@ha/machines';
import { toSvg } from '@ha/machines/svg';
import { chartMarks, markChartSvg } from '../../src/observe/chart-marks.ts';
import { escapeHtml, renderUiPage, svgElement } from '../../src/observe/ui-page.ts';

const model = chartModel(databaseMachine);
const steps = [
  { event: 'cmd.start', from: 'stopped', to: 'starting' },
  { event: 'xstate.done.actor.start', from: 'starting', to: 'running' },
];

describe('chartMarks', () => {
  it('marks the active states (not the root), the path and the states it passed', () => {
    const marks = chartMarks(model, ['database', 'database.running'], steps);
    expect(marks.active).toEqual(['database.running']);
    expect(marks.path.map((i) => `${model.transitions[i]!.source} ${model.transitions[i]!.event}`)).toEqual([
      'database.stopped cmd.start',
      'database.starting done: start',
    ]);
    expect([...marks.visited].sort()).toEqual(['database.running', 'database.starting', 'database.stopped']);
    expect(chartMarks(model, [], []).active).toEqual([]);
  });

  it('keeps the last 5 steps', () => {
    const loop = Array.from({ length: 4 }, () => [
      { event: 'cmd.restart', from: 'running', to: 'restarting' },
      { event: 'xstate.done.actor.restart', from: 'restarting', to: 'running' },
    ]).flat();
    expect(chartMarks(model, [], [...steps, ...loop]).path).toHaveLength(5);
    expect(chartMarks(model, [], [...steps, ...loop]).visited).not.toContain('database.stopped');
  });
});

describe('markChartSvg', () => {
  it('sets active, visited, path and path-last on the drawn chart, replacing earlier marks', async () => {
    const svg = await toSvg(model, chartLayoutOf(model));
    const classOf = (text: string, id: string): string | undefined =>
      new RegExp(`<g id="${id.replace(/-/g, '&#45;').replace(/>/g, '&gt;').replace(/\./g, '\\.')}[^"]*" class="([^"]*)"`).exec(text)?.[1];
    const marked = markChartSvg(svg, chartMarks(model, ['database', 'database.running'], steps));
    expect(classOf(marked, 'state:database.running')).toBe('node active');
    expect(classOf(marked, 'state:database.starting')).toBe('node visited');
    expect(classOf(marked, 'state:database.initdb')).toBe('node');
    expect(classOf(marked, 'state:database')).toBe('cluster');
    expect(classOf(marked, 'group:bootstrap')).toBe('cluster group');
    // cmd.start is bundled: stopped and crashed both have it, so it leaves the `stopped` box.
    expect(classOf(marked, 'edge:group:down->database.starting:')).toMatch(/^edge( t\d+)+ path$/);
    expect(classOf(marked, 'edge:database.starting->database.running:')).toMatch(/^edge( t\d+)+ path path-last$/);
    expect(classOf(marked, 'edge:database.running->database.restarting:')).toMatch(/^edge t\d+$/);
    // Marking again with other marks replaces them; no marks gives the drawing back.
    const again = markChartSvg(marked, chartMarks(model, ['database', 'database.stopped'], []));
    expect(classOf(again, 'state:database.running')).toBe('node');
    expect(classOf(again, 'state:database.stopped')).toBe('node active');
    expect(again).not.toMatch(/class="[^"]*\b(path|path-last|visited)\b/);
    expect(markChartSvg(marked, { active: [], visited: [], path: [] })).toBe(svg);
  });
});

describe('renderUiPage', () => {
  it('escapes every text it writes and keeps the markers it does not know', () => {
    const html = renderUiPage('<!--charts-->|<!--transitions-->|<!--cluster-members-->|<!--cluster-scope-->|<!--as-of-->|<!--other-->', {
      now: Date.UTC(2026, 0, 2, 3, 4, 5),
      charts: [{ name: 'x<y', state: 'a"b', marks: { active: [], visited: [], path: [] } }],
      transitions: [
        {
          seq: 1,
          time: '2026-01-02T03:04:05.678Z',
          machine: 'm',
          kind: 'transition',
          event: 'e<',
          from: 'a&',
          to: 'b',
          reason: '<script>',
        },
      ],
      cluster: { scope: '<s>', members: [{ name: 'n"1', role: 'leader', state: '<b>', lag: 2048, host: 'h', port: 5432 }] },
      pathSteps: 5,
    });
    expect(html).not.toMatch(/<script>|<s>|<b>|x<y/);
    expect(html).toContain('id="chart-x&lt;y" data-machine="x&lt;y" data-state="a&quot;b"');
    expect(html).toContain(
      '03:04:05.678</span><span class="t-machine">m</span>: a&amp; → b <span class="t-event">(e&lt;)</span><span class="t-reason">&lt;script&gt;</span>',
    );
    expect(html).toContain('<td>2.0 KiB</td>');
    expect(html).toContain('<td class="muted">h:5432</td>');
    expect(html).toContain('|as of 03:04:05 UTC|<!--other-->');
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
    expect(svgElement('<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg a="1"></svg>\n')).toBe('<svg a="1"></svg>');
  });
});
