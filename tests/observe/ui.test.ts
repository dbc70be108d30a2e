import { afterEach, describe, expect, it } from 'vitest';
import { fixture } from './fixture.ts';

let current: ReturnType<typeof fixture> | undefined;
function setup() {
  current = fixture();
  return current;
}
afterEach(() => current?.stop());

/** The `<section>` of a machine's chart in the page. */
function chartSection(html: string, name: string): string {
  return new RegExp(`<section class="chart" id="chart-${name}"[\\s\\S]*?</section>`).exec(html)?.[0] ?? '';
}

/** The class attribute of the SVG group with this (decoded) id, '' when there is none. */
function classOf(svg: string, id: string): string {
  for (const m of svg.matchAll(/<g id="([^"]*)" class="([^"]*)"/g)) {
    if ((m[1] ?? '').replace(/&#45;/g, '-').replace(/&gt;/g, '>') === id) return m[2] ?? '';
  }
  return '';
}

describe('GET /ui', () => {
  it('returns one HTML page with the three charts and its own assets only', async () => {
    const f = setup();
    for (const path of ['/ui', '/ui/']) {
      const res = await f.app.request(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      for (const [name, state] of [
        ['database', 'stopped'],
        ['switchover', 'idle'],
        ['restart', 'idle'],
      ]) {
        expect(html).toContain(`<section class="chart" id="chart-${name}" data-machine="${name}" data-state="${state}">`);
      }
      expect(html).toContain('id="transition-list"');
      expect(html).toContain('id="cluster-members"');
      // Every referenced asset is served by the node itself.
      const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
      expect([...new Set(refs)].sort()).toEqual(['/ui/app.css', '/ui/app.js', 'data:,']); // data:, an empty favicon
      // Graphviz's SVG names its namespaces (xmlns); nothing is loaded from them.
      expect(html.replace(/xmlns(:xlink)?="http:\/\/www\.w3\.org\/[^"]*"/g, '')).not.toMatch(/https?:\/\//);
    }
  });

  it('draws every chart into the page, the current state marked, so the first paint needs no script', async () => {
    const f = setup();
    const html = await (await f.app.request('/ui')).text();
    for (const [name, state] of [
      ['database', 'stopped'],
      ['switchover', 'idle'],
      ['restart', 'idle'],
    ] as const) {
      const section = chartSection(html, name);
      expect(section, name).toMatch(/<div class="svg" aria-label="[a-z]+ state chart"><svg [^>]*viewBox=/);
      expect(section).toContain(`<h2>${name} <span class="state">${state}</span></h2>`);
      // The readable layout: the edges name their transitions, the groups are drawn.
      expect(section).toMatch(/class="edge t\d+( t\d+)*"/);
      expect(section).toContain('id="group:');
      expect(classOf(section, `state:${name}.${state}`)).toBe('node active');
      // The root cluster is never marked: colouring the whole chart says nothing.
      expect(classOf(section, `state:${name}`)).toBe('cluster');
      expect(section).not.toContain('<?xml');
    }
    expect(html).toContain('<span id="connection" class="status" data-status="snapshot">as of 10:00:00 UTC</span>');
  });

  it('marks the path of the last transitions: its edges, the newest, and the states it passed', async () => {
    const f = setup();
    const at = f.now();
    f.db.send({ type: 'cmd.clone', reason: 'no data directory', at });
    await new Promise((r) => setTimeout(r, 20)); // the fixture's clone and start resolve at once
    f.db.send({ type: 'cmd.demote', mode: 'fast', reason: 'switchover', at });
    await new Promise((r) => setTimeout(r, 20));
    expect(f.db.getSnapshot().value).toBe('stopped');
    const html = await (await f.app.request('/ui')).text();
    const db = chartSection(html, 'database');
    expect(db).toContain('data-state="stopped"');
    expect(classOf(db, 'state:database.stopped')).toBe('node active');
    // stopped → creating_replica → starting → running → stopping → stopped: the last 5 steps.
    for (const s of ['creating_replica', 'starting', 'running', 'stopping'])
      expect(classOf(db, `state:database.${s}`), s).toBe('node visited');
    expect(classOf(db, 'state:database.initdb')).toBe('node');
    const edgeClass = (from: string, to: string): string => {
      const m = new RegExp(`<g id="edge:database\\.${from}&#45;&gt;database\\.${to}:\\d+" class="([^"]*)"`).exec(db);
      return m?.[1] ?? '';
    };
    expect(edgeClass('creating_replica', 'starting')).toMatch(/ path$/);
    expect(edgeClass('running', 'stopping')).toMatch(/ path$/);
    expect(edgeClass('stopping', 'stopped')).toMatch(/ path path-last$/);
    expect(edgeClass('running', 'restarting')).not.toContain('path');
    // The server lists the transitions too (newest first), before the script redraws them.
    const list = /<ol id="transition-list">([\s\S]*?)<\/ol>/.exec(html)?.[1] ?? '';
    expect(list.match(/<li /g)).toHaveLength(5);
    expect(list).toContain(
      '<span class="t-machine">database</span>: stopping → stopped <span class="t-event">(xstate.done.actor.stop)</span>',
    );
    expect(list.indexOf('stopping → stopped')).toBeLessThan(list.indexOf('stopped → creating_replica'));
  });

  it('fills the cluster table, escaping every text', async () => {
    const f = setup();
    const html = await (await f.app.request('/ui')).text();
    expect(html).toContain('<span id="cluster-scope" class="muted">demo</span>');
    expect(html).toContain(
      '<tr data-member="node1"><td>node1</td><td class="role-leader">leader</td><td>running</td><td></td><td>1</td><td class="muted"></td></tr>',
    );
  });

  it('serves the script and the stylesheet, with no external URL', async () => {
    const f = setup();
    const js = await f.app.request('/ui/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const script = await js.text();
    for (const needle of [
      "new EventSource('/events/stream",
      "fetch('/machines')",
      '/chart.svg',
      "fetch('/ui/cluster')",
      '__transitionLatencies',
      '__lastTransitionAt',
      'dataset.state',
      "'path-last'",
      "'visited'",
    ]) {
      expect(script).toContain(needle);
    }
    const css = await f.app.request('/ui/app.css');
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    const style = await css.text();
    expect(style).toContain('g.node.active');
    expect(style).toContain('g.edge.path');
    expect(style).toContain('g.node.visited');
    expect(`${script}\n${style}`).not.toMatch(/https?:\/\/|@import|url\(/);
  });

  it('serves the cluster document the page shows', async () => {
    const f = setup();
    const res = await f.app.request('/ui/cluster');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ scope: 'demo', members: [{ name: 'node1', role: 'leader', state: 'running', timeline: 1 }] });
  });
});
