/**
 * The layout options of the DOT/SVG charts (groups, ranks, merged and bundled edges, label
 * wrapping), the machines' presets, and the recent path (chartPath, DOT `path`).
 */
import { describe, expect, it } from 'vitest';
import {
  DATABASE_CHART_LAYOUT,
  chartLayoutOf,
  chartModel,
  chartPath,
  databaseMachine,
  drawnEdges,
  restartMachine,
  stepTransition,
  switchoverMachine,
  toDot,
  type ChartModel,
} from '../../packages/machines/src/index.ts';
import { edgeLabelText } from '../../packages/machines/src/charts/layout.ts';
import { toSvg } from '../../packages/machines/src/charts/svg.ts';
import { lifecycle } from './sample-machines.ts';

/**
 * A flat machine `m`: a and b fail into a_failed / b_failed, which both accept `retry` (back to
 * a) and `give_up` (to done); a_failed also accepts `skip` (to done) alone; done → a on `again`
 * twice over (two guards) and on `reset`.
 */
const flat: ChartModel = {
  id: 'm',
  states: [
    { id: 'm', key: 'm', type: 'compound', initial: 'm.a' },
    { id: 'm.a', key: 'a', type: 'atomic', parent: 'm' },
    { id: 'm.b', key: 'b', type: 'atomic', parent: 'm' },
    { id: 'm.a_failed', key: 'a_failed', type: 'atomic', parent: 'm' },
    { id: 'm.b_failed', key: 'b_failed', type: 'atomic', parent: 'm' },
    { id: 'm.done', key: 'done', type: 'atomic', parent: 'm' },
  ],
  transitions: [
    { source: 'm.a', targets: ['m.b'], event: 'next', eventType: 'next' }, // 0
    { source: 'm.a', targets: ['m.a_failed'], event: 'error: a', eventType: 'xstate.error.actor.a' }, // 1
    { source: 'm.b', targets: ['m.b_failed'], event: 'error: b', eventType: 'xstate.error.actor.b' }, // 2
    { source: 'm.a_failed', targets: ['m.a'], event: 'retry', eventType: 'retry' }, // 3
    { source: 'm.a_failed', targets: ['m.done'], event: 'give_up', eventType: 'give_up' }, // 4
    { source: 'm.a_failed', targets: ['m.done'], event: 'skip', eventType: 'skip' }, // 5
    { source: 'm.b_failed', targets: ['m.a'], event: 'retry', eventType: 'retry' }, // 6
    { source: 'm.b_failed', targets: ['m.done'], event: 'give_up', eventType: 'give_up' }, // 7
    { source: 'm.done', targets: ['m.a'], event: 'again', eventType: 'again', guard: 'early' }, // 8
    { source: 'm.done', targets: ['m.a'], event: 'again', eventType: 'again' }, // 9
    { source: 'm.done', targets: ['m.a'], event: 'reset', eventType: 'reset' }, // 10
    { source: 'm.b', targets: [], event: 'tick', eventType: 'tick' }, // 11
  ],
};
const failedGroup = { id: 'failed', label: 'failed', members: ['m.a_failed', 'm.b_failed'] };

/** The DOT line of the edge with this id. */
const edgeLine = (dot: string, id: string): string | undefined => dot.split('\n').find((l) => l.includes(`[id="${id}"`));

describe('drawnEdges', () => {
  it('draws one edge per transition and target by default', () => {
    const edges = drawnEdges(flat);
    expect(edges).toHaveLength(12);
    expect(edges.map((e) => e.transitions)).toEqual(flat.transitions.map((_, i) => [i]));
    expect(edges[11]).toMatchObject({ source: 'm.b', target: 'm.b', internal: true, labels: ['tick (internal)'] });
  });

  it('mergeEdges: one edge per source and target, labels in the machine order, each once', () => {
    const edges = drawnEdges(flat, { mergeEdges: true });
    const done = edges.find((e) => e.source === 'm.done' && e.target === 'm.a');
    expect(done).toMatchObject({ transitions: [8, 9, 10], labels: ['again [early]', 'again', 'reset'] });
    expect(edges.find((e) => e.source === 'm.a_failed' && e.target === 'm.done')?.labels).toEqual(['give_up', 'skip']);
    expect(edges).toHaveLength(9);
  });

  it('bundleGroups: a transition every state of a group has is drawn once from the group', () => {
    const edges = drawnEdges(flat, { groups: [failedGroup], bundleGroups: true, mergeEdges: true });
    const fromGroup = edges.filter((e) => e.source === 'group:failed');
    expect(fromGroup.map((e) => [e.target, e.transitions, e.labels])).toEqual([
      ['m.a', [3, 6], ['retry']],
      ['m.done', [4, 7], ['give_up']],
    ]);
    // `skip` is a_failed's alone: still drawn from it.
    expect(edges.find((e) => e.source === 'm.a_failed')).toMatchObject({ target: 'm.done', transitions: [5], labels: ['skip'] });
    expect(edges.some((e) => e.source === 'm.b_failed')).toBe(false);
    // Every transition is drawn exactly once.
    expect(edges.flatMap((e) => e.transitions).sort((a, b) => a - b)).toEqual(flat.transitions.map((_, i) => i));
    // Without bundleGroups, the groups do not change the edges.
    expect(drawnEdges(flat, { groups: [failedGroup], mergeEdges: true })).toEqual(drawnEdges(flat, { mergeEdges: true }));
  });

  it('bundleGroups needs the same guard and target in every state of the group', () => {
    const model: ChartModel = {
      ...flat,
      transitions: [
        { source: 'm.a_failed', targets: ['m.done'], event: 'go', eventType: 'go', guard: 'x' },
        { source: 'm.b_failed', targets: ['m.done'], event: 'go', eventType: 'go', guard: 'y' },
        { source: 'm.a_failed', targets: ['m.a'], event: 'back', eventType: 'back' },
        { source: 'm.b_failed', targets: ['m.b'], event: 'back', eventType: 'back' },
      ],
    };
    const edges = drawnEdges(model, { groups: [failedGroup], bundleGroups: true, mergeEdges: true });
    expect(edges.some((e) => e.source === 'group:failed')).toBe(false);
    expect(edges).toHaveLength(4);
  });

  it('rejects groups that do not fit the model', () => {
    expect(() => drawnEdges(flat, { groups: [{ id: 'g', label: 'g', members: ['m.nope'] }], bundleGroups: true })).toThrow(
      "chart layout: group 'g' names 'm.nope', which is neither a state of 'm' nor a group",
    );
    expect(() => toDot(flat, { groups: [failedGroup, { id: 'h', label: 'h', members: ['m.a_failed'] }] })).toThrow(
      "chart layout: 'm.a_failed' is in group 'failed' and in group 'h'",
    );
    expect(() => toDot(flat, { groups: [{ id: 'm.a', label: 'x', members: [] }] })).toThrow("group id 'm.a' is used twice");
    expect(() =>
      toDot(chartModel(lifecycle), { groups: [{ id: 'g', label: 'g', members: ['lifecycle.starting', 'lifecycle.running.replica'] }] }),
    ).toThrow("chart layout: group 'g' holds states of different parents");
    expect(() =>
      toDot(flat, {
        groups: [
          { id: 'g', label: 'g', members: ['h'] },
          { id: 'h', label: 'h', members: ['g'] },
        ],
      }),
    ).toThrow('groups nest in a cycle');
  });
});

describe('edgeLabelText', () => {
  it('puts one label per line, or wraps at a width, breaking a long label before its guard', () => {
    expect(edgeLabelText(['cmd.stop', 'cmd.demote', 'cmd.reinitialize'])).toBe('cmd.stop\ncmd.demote\ncmd.reinitialize');
    expect(edgeLabelText(['cmd.stop', 'cmd.demote', 'cmd.reinitialize'], 22)).toBe('cmd.stop, cmd.demote\ncmd.reinitialize');
    expect(edgeLabelText(['switchover.requested [requestDueNow]'], 22)).toBe('switchover.requested\n[requestDueNow]');
    expect(edgeLabelText(['done: stop [afterStopDemoted]', 'done: stop'], 22)).toBe('done: stop\n[afterStopDemoted]\ndone: stop');
  });
});

describe('toDot layout options', () => {
  it('draws groups as dashed clusters inside their parent, nested as given', () => {
    const dot = toDot(flat, {
      groups: [{ id: 'work', label: 'work', members: ['m.a', 'm.b', 'failed'] }, failedGroup],
    });
    const work = dot.indexOf('subgraph "cluster_group:work" {');
    const failed = dot.indexOf('subgraph "cluster_group:failed" {');
    expect(work).toBeGreaterThan(dot.indexOf('subgraph "cluster_m" {'));
    expect(failed).toBeGreaterThan(work);
    expect(dot).toContain('id="group:work"; class="group";');
    expect(dot).toContain('label="work"; style="rounded,dashed";');
    // The failure states are declared inside the inner group, once each.
    expect(dot.indexOf('"m.a_failed" [id="state:m.a_failed"')).toBeGreaterThan(failed);
    expect(dot.match(/\[id="state:m\.a_failed"/g)).toHaveLength(1);
    // By depth: the groups inside the root cluster, their states one level deeper; done stays a child of the root.
    expect(dot).toContain('\n    subgraph "cluster_group:work" {');
    expect(dot).toContain('\n      subgraph "cluster_group:failed" {');
    expect(dot).toContain('\n        "m.a_failed" [id="state:m.a_failed"');
    expect(dot).toContain('\n    "m.done" [id="state:m.done"');
  });

  it('draws a bundled edge from the group box (ltail) with every transition in its class', () => {
    const dot = toDot(flat, { groups: [failedGroup], bundleGroups: true, mergeEdges: true });
    expect(edgeLine(dot, 'edge:group:failed->m.a:3')).toBe(
      '  "m.a_failed" -> "m.a" [id="edge:group:failed->m.a:3", label="retry", ltail="cluster_group:failed", class="t3 t6"];',
    );
    expect(edgeLine(dot, 'edge:m.done->m.a:8')).toContain('label="again [early]\\nagain\\nreset"');
    expect(edgeLine(dot, 'edge:m.done->m.a:8')).toContain('class="t8 t9 t10"');
  });

  it('ranks: rank=same per rank, linked in order, and edges back to an earlier rank do not constrain', () => {
    const dot = toDot(flat, { ranks: [['m.a'], ['m.b', 'm.a_failed'], ['m.b_failed'], ['m.done']] });
    expect(dot).toContain('  newrank=true;');
    expect(dot).toContain('  { rank=same; "m.b"; "m.a_failed"; }');
    expect(dot).toContain('  "m.a" -> "m.b" [style=invis];');
    expect(dot).toContain('  "m.b" -> "m.b_failed" [style=invis];');
    expect(edgeLine(dot, 'edge:m.a->m.b:0')).not.toContain('constraint=false');
    expect(edgeLine(dot, 'edge:m.a_failed->m.a:3')).toContain('constraint=false');
    expect(edgeLine(dot, 'edge:m.done->m.a:10')).toContain('constraint=false');
    expect(toDot(flat)).not.toContain('newrank');
  });

  it('sets direction, font size and spacing', () => {
    const dot = toDot(flat, { rankdir: 'TB', fontSize: 14, nodesep: 0.3, ranksep: 0.25 });
    expect(dot).toContain('rankdir=TB;');
    expect(dot).toContain('node [shape=box, style=rounded, fontname="Helvetica", fontsize=14];');
    expect(dot).toContain('edge [fontname="Helvetica", fontsize=13];');
    expect(dot).toContain('nodesep=0.3;');
    expect(dot).toContain('ranksep=0.25;');
  });

  it('draws the path: its edges in the path colour, the states it passed outlined', () => {
    const dot = toDot(flat, { path: [1, 3], highlight: ['m.a'], mergeEdges: true });
    expect(edgeLine(dot, 'edge:m.a->m.a_failed:1')).toContain('color="#c2410c", fontcolor="#c2410c", penwidth=2.5');
    expect(edgeLine(dot, 'edge:m.a_failed->m.a:3')).toContain('color="#c2410c"');
    expect(edgeLine(dot, 'edge:m.a->m.b:0')).not.toContain('#c2410c');
    expect(dot).toMatch(/"m\.a_failed" \[[^\n]*color="#c2410c", penwidth=2/);
    // The current state keeps the highlight fill, not the path border.
    expect(dot).toMatch(/"m\.a" \[[^\n]*fillcolor="#ff9966"/);
    expect(dot).not.toMatch(/"m\.b" \[[^\n]*#c2410c/);
  });
});

describe('presets', () => {
  const database = chartModel(databaseMachine);

  it('the database layout names every state of the machine once, in a group and on a rank', () => {
    const groupIds = new Set(DATABASE_CHART_LAYOUT.groups!.map((g) => g.id));
    const grouped = DATABASE_CHART_LAYOUT.groups!.flatMap((g) => g.members.filter((m) => !groupIds.has(m)));
    const ranked = DATABASE_CHART_LAYOUT.ranks!.flat();
    const states = database.states
      .slice(1)
      .map((s) => s.id)
      .sort();
    expect([...grouped].sort()).toEqual(states);
    expect([...ranked].sort()).toEqual(states);
    expect(chartLayoutOf(database)).toBe(DATABASE_CHART_LAYOUT);
  });

  it('each preset draws every transition once, in fewer edges than transitions', async () => {
    for (const machine of [databaseMachine, switchoverMachine, restartMachine]) {
      const model = chartModel(machine);
      const layout = chartLayoutOf(model);
      expect(layout.groups?.length ?? 0, model.id).toBeGreaterThan(0);
      const edges = drawnEdges(model, layout);
      expect(edges.flatMap((e) => e.transitions).sort((a, b) => a - b)).toEqual(model.transitions.map((_, i) => i));
      expect(edges.length).toBeLessThan(model.transitions.length);
      // Every transition's label is in the SVG, in the edge whose class names it.
      const svg = await toSvg(model, layout);
      for (const e of edges) {
        const group = new RegExp(`<g id="edge:[^"]*" class="edge ${e.transitions.map((i) => `t${i}`).join(' ')}">[\\s\\S]*?</g>`).exec(
          svg,
        )?.[0];
        expect(group, `${e.source} -> ${e.target}`).toBeDefined();
        const texts = [...(group ?? '').matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).join(' ');
        for (const l of e.labels)
          for (const word of l.split(' ')) expect(texts).toContain(word.replace(/&/g, '&amp;').replace(/>/g, '&gt;'));
      }
    }
  });

  it('a machine without a preset, or whose states differ, gets the generic readable layout', () => {
    const other = chartModel(lifecycle);
    expect(chartLayoutOf(other)).toMatchObject({ rankdir: 'TB', mergeEdges: true });
    expect(chartLayoutOf(other).groups).toBeUndefined();
    const renamed: ChartModel = { ...flat, id: 'database' };
    expect(chartLayoutOf(renamed).groups).toBeUndefined();
    expect(() => toDot(renamed, chartLayoutOf(renamed))).not.toThrow();
  });
});

describe('chartPath', () => {
  const database = chartModel(databaseMachine);
  const index = (source: string, event: string, target: string): number =>
    database.transitions.findIndex((t) => t.source === `database.${source}` && t.event === event && t.targets[0] === `database.${target}`);

  it('matches journaled steps to the chart transitions they took, oldest first, the last `limit`', () => {
    const steps = [
      { event: 'cmd.clone', from: 'stopped', to: 'creating_replica' },
      { event: 'xstate.done.actor.clone', from: 'creating_replica', to: 'starting' },
      { event: 'xstate.done.actor.start', from: 'starting', to: 'running' },
      { event: 'cmd.demote', from: 'running', to: 'stopping' },
    ];
    expect(chartPath(database, steps)).toEqual([
      index('stopped', 'cmd.clone', 'creating_replica'),
      index('creating_replica', 'done: clone', 'starting'),
      index('starting', 'done: start', 'running'),
      index('running', 'cmd.demote', 'stopping'),
    ]);
    expect(chartPath(database, steps, 2)).toEqual([
      index('starting', 'done: start', 'running'),
      index('running', 'cmd.demote', 'stopping'),
    ]);
    // A step no transition fits is left out.
    expect(chartPath(database, [{ event: 'nope', from: 'stopped', to: 'running' }, ...steps.slice(0, 1)])).toEqual([
      index('stopped', 'cmd.clone', 'creating_replica'),
    ]);
  });

  it('takes the first of guarded alternatives, the deepest source, and eventless transitions', () => {
    // done: stop [afterStopDemoted] and done: stop both lead stopping → stopped: the first is taken.
    expect(stepTransition(database, { event: 'xstate.done.actor.stop', from: 'stopping', to: 'stopped' })).toBe(
      index('stopping', 'done: stop', 'stopped'),
    );
    expect(database.transitions[index('stopping', 'done: stop', 'stopped')]?.guard).toBe('afterStopDemoted');
    const life = chartModel(lifecycle);
    // lifecycle.running.promoting's own onError beats nothing else; the root-level shutdown fits from anywhere.
    const shutdown = stepTransition(life, { event: 'shutdown', from: 'running.primary', to: 'stopped' });
    expect(life.transitions[shutdown]).toMatchObject({ source: 'lifecycle', event: 'shutdown' });
    // running.pg.crashed (declared by running) fits from running.replica.
    const crashed = stepTransition(life, { event: 'pg.crashed', from: 'running.replica', to: 'crashed' });
    expect(life.transitions[crashed]).toMatchObject({ source: 'lifecycle.running', event: 'pg.crashed' });
    // An eventless transition (crashed → starting, `always` [canRetry]) fits the event that led there.
    const always = stepTransition(life, { event: 'retry', from: 'crashed', to: 'starting' });
    expect(always).toBeGreaterThanOrEqual(0);
    expect(['always', 'retry']).toContain(life.transitions[always]?.event);
  });
});
