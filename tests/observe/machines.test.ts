import { afterEach, describe, expect, it } from 'vitest';
import { fixture } from './fixture.ts';

let current: ReturnType<typeof fixture> | undefined;
function setup() {
  current = fixture();
  return current;
}
afterEach(() => current?.stop());

interface MachinesBody {
  time: string;
  machines: {
    name: string;
    definition: { id: string; states: { id: string }[] };
    state: string | null;
    activeStates: string[];
    context: Record<string, unknown> | null;
  }[];
}

describe('GET /machines', () => {
  it('lists the three machines with definition, state, active states and context', async () => {
    const f = setup();
    f.db.send({ type: 'pg.found', role: 'primary', reason: 'postmaster already running', at: f.now() });
    f.switchover.send({ type: 'switchover.requested', atMs: f.now() + 60_000, now: f.now() });
    const res = await f.app.request('/machines');
    expect(res.status).toBe(200);
    const body = (await res.json()) as MachinesBody;
    expect(body.time).toBe('2026-05-01T10:00:00.000Z');
    expect(body.machines.map((m) => [m.name, m.state])).toEqual([
      ['database', 'running'],
      ['switchover', 'scheduled'],
      ['restart', 'idle'],
    ]);
    const [db, sw] = body.machines;
    expect(db?.definition.id).toBe('database');
    expect(db?.definition.states).toHaveLength(16); // root + the 15 states
    expect(db?.activeStates).toEqual(['database', 'database.running']);
    expect(db?.context).toMatchObject({ role: 'primary', reason: 'postmaster already running', promoting: false });
    expect(sw?.context).toMatchObject({ loopWaitMs: 10_000, request: { atMs: f.now() + 60_000 } });
  });

  it('gives null state and [] active states for a machine without a snapshot', async () => {
    const { createObserveRoutes } = await import('../../src/observe/app.ts');
    const { Journal, restartMachine } = await import('@ha/machines');
    const app = createObserveRoutes({
      journal: new Journal(),
      machines: () => [{ name: 'restart', machine: restartMachine, snapshot: () => undefined }],
      cluster: () => ({}),
    });
    const body = (await (await app.request('/machines')).json()) as MachinesBody;
    expect(body.machines[0]).toMatchObject({ name: 'restart', state: null, activeStates: [], context: null });
  });

  it('answers one machine by name, 404 for an unknown one', async () => {
    const f = setup();
    const res = await f.app.request('/machines/restart');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { state: string }).state).toBe('idle');
    const missing = await f.app.request('/machines/nope');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: "no machine named 'nope'" });
  });
});

describe('GET /machines/:name/chart.<format>', () => {
  it('returns SVG with the current state highlighted when ?highlight=1', async () => {
    const f = setup();
    f.db.send({ type: 'pg.found', role: 'replica', reason: 'adopted', at: f.now() });
    const res = await f.app.request('/machines/database/chart.svg?highlight=1');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    const svg = await res.text();
    expect(svg).toContain('<svg');
    const running = /<g id="state:database\.running" class="node">[\s\S]*?<\/g>/.exec(svg)?.[0] ?? '';
    expect(running).toContain('fill="#ff9966"');
    const stopped = /<g id="state:database\.stopped" class="node">[\s\S]*?<\/g>/.exec(svg)?.[0] ?? '';
    expect(stopped).toContain('<title>database.stopped</title>');
    expect(stopped).not.toContain('#ff9966');
  });

  it('returns SVG without highlight by default, and the other formats', async () => {
    const f = setup();
    const svg = await (await f.app.request('/machines/switchover/chart.svg')).text();
    expect(svg).toContain('id="state:switchover.idle"');
    expect(svg).not.toContain('#ff9966');
    const mermaid = await f.app.request('/machines/switchover/chart.mermaid?highlight=1');
    expect(await mermaid.text()).toContain('class s_switchover_idle current');
    const json = await f.app.request('/machines/restart/chart.json');
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await json.json()) as { id: string }).id).toBe('restart');
    const dot = await f.app.request('/machines/restart/chart.dot');
    expect(await dot.text()).toMatch(/^digraph "restart"/);
  });

  it('lays out with ?layout=plain&rankdir=: auto turns a very wide chart top-to-bottom', async () => {
    const f = setup();
    const size = (svg: string) => (/<svg width="([\d.]+)pt" height="([\d.]+)pt"/.exec(svg) ?? []).slice(1).map(Number);
    const [lrW = 0, lrH = 0] = size(await (await f.app.request('/machines/database/chart.svg?layout=plain')).text());
    expect(lrW / lrH).toBeGreaterThan(3);
    const [autoW = 0, autoH = 0] = size(await (await f.app.request('/machines/database/chart.svg?layout=plain&rankdir=auto')).text());
    expect(autoW).toBeLessThan(autoH);
    const tb = await (await f.app.request('/machines/restart/chart.dot?rankdir=TB')).text();
    expect(tb).toContain('rankdir=TB;');
    const bad = await f.app.request('/machines/restart/chart.svg?rankdir=up');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'rankdir must be LR, TB or auto', parameter: 'rankdir' });
  });

  it('draws the readable layout by default, the plain one with ?layout=plain; ?highlight=1 adds the recent path', async () => {
    const f = setup();
    const readable = await (await f.app.request('/machines/database/chart.dot')).text();
    expect(readable).toContain('subgraph "cluster_group:bootstrap" {');
    expect(readable).toContain('rankdir=TB;');
    const plain = await (await f.app.request('/machines/database/chart.dot?layout=plain')).text();
    expect(plain).not.toContain('cluster_group:');
    expect(plain).toContain('rankdir=LR;');
    expect(await (await f.app.request('/machines/database/chart.dot?rankdir=LR')).text()).toContain('rankdir=LR;');
    const bad = await f.app.request('/machines/database/chart.svg?layout=fancy');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'layout must be readable or plain', parameter: 'layout' });
    f.db.send({ type: 'cmd.start', role: 'replica', reason: 'follow', at: f.now() });
    await new Promise((r) => setTimeout(r, 20));
    const lit = await (await f.app.request('/machines/database/chart.dot?highlight=1')).text();
    expect(lit).toMatch(/"database\.running" \[[^\n]*fillcolor="#ff9966"/);
    expect(lit).toMatch(/\[id="edge:database\.starting->database\.running:\d+"[^\n]*color="#c2410c"/);
    expect(lit).toMatch(/"database\.starting" \[[^\n]*color="#c2410c"/);
    expect(readable).not.toContain('#c2410c');
  });

  it('404s for an unknown machine or file', async () => {
    const f = setup();
    expect((await f.app.request('/machines/nope/chart.svg')).status).toBe(404);
    expect((await f.app.request('/machines/database/chart.png')).status).toBe(404);
    expect((await f.app.request('/machines/database/graph.svg')).status).toBe(404);
  });
});
