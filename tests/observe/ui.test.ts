import { afterEach, describe, expect, it } from 'vitest';
import { fixture } from './fixture.ts';

let current: ReturnType<typeof fixture> | undefined;
function setup() {
  current = fixture();
  return current;
}
afterEach(() => current?.stop());

describe('GET /ui', () => {
  it('returns one HTML page with the three chart containers and its own assets only', async () => {
    const f = setup();
    for (const path of ['/ui', '/ui/']) {
      const res = await f.app.request(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      for (const name of ['database', 'switchover', 'restart']) {
        expect(html).toMatch(new RegExp(`<section class="chart" id="chart-${name}" data-machine="${name}" data-state="">`));
      }
      expect(html).toContain('id="transition-list"');
      expect(html).toContain('id="cluster-members"');
      // Every referenced asset is served by the node itself.
      const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
      expect(refs.sort()).toEqual(['/ui/app.css', '/ui/app.js', 'data:,']); // data:, an empty favicon
      expect(html).not.toMatch(/https?:\/\//);
    }
  });

  it('serves the script and the stylesheet, with no external URL', async () => {
    const f = setup();
    const js = await f.app.request('/ui/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const script = await js.text();
    for (const needle of ["new EventSource('/events/stream", "fetch('/machines')", '/chart.svg', "fetch('/ui/cluster')", '__transitionLatencies', '__lastTransitionAt', 'dataset.state']) {
      expect(script).toContain(needle);
    }
    const css = await f.app.request('/ui/app.css');
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    const style = await css.text();
    expect(style).toContain('g.node.active');
    expect(`${script}\n${style}`).not.toMatch(/https?:\/\/|@import|url\(/);
  });

  it('serves the cluster document the page shows', async () => {
    const f = setup();
    const res = await f.app.request('/ui/cluster');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ scope: 'demo', members: [{ name: 'node1', role: 'leader', state: 'running', timeline: 1 }] });
  });
});
