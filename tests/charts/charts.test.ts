import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import {
  CHART_FORMATS,
  activeStateIds,
  chartModel,
  isChartFormat,
  mermaidIds,
  mermaidText,
  renderChart,
  toDot,
  toJson,
  toMermaid,
  transitionLabel,
  type ChartModel,
} from '../../packages/machines/src/charts/index.ts';
import { dotToSvg, toSvg } from '../../packages/machines/src/charts/svg.ts';
import { SAMPLE_MACHINES, lifecycle, monitor } from './sample-machines.ts';

/** Decode the entities Graphviz writes into SVG text and attributes. */
function decodeXml(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCharCode(parseInt(n, 16)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** Text contents of every `<text>` element, decoded. */
function svgTexts(svg: string): string[] {
  return [...svg.matchAll(/<text\b[^>]*>([^<]*)<\/text>/g)].map((m) => decodeXml(m[1] ?? ''));
}

/** From the `<g id="...">` with that (decoded) id to the next `</g>` (Graphviz writes nodes, edges and clusters as flat groups). */
function svgGroup(svg: string, id: string): string | undefined {
  for (const m of svg.matchAll(/<g id="([^"]*)"/g)) {
    if (decodeXml(m[1] ?? '') !== id) continue;
    const start = m.index ?? 0;
    const end = svg.indexOf('</g>', start);
    return svg.slice(start, end === -1 ? undefined : end);
  }
  return undefined;
}

/** Tags balance (ignoring the prolog, comments, doctype and self-closing tags). */
function assertXmlBalanced(svg: string): void {
  const body = svg
    .replace(/<\?[\s\S]*?\?>/g, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<!DOCTYPE[\s\S]*?>/g, '');
  const stack: string[] = [];
  for (const m of body.matchAll(/<(\/?)([A-Za-z][\w:.-]*)[^>]*?(\/?)>/g)) {
    const [, close, name, selfClose] = m;
    if (selfClose) continue;
    if (close) expect(stack.pop()).toBe(name);
    else stack.push(name ?? '');
  }
  expect(stack).toEqual([]);
}

/**
 * Statement forms the Mermaid renderer emits (stateDiagram-v2 grammar subset). Ids follow Mermaid's
 * ID token (no `:`, `-`, space, `{`); text after ` : ` follows its DESCR token `":"[^:\n;]+`.
 */
const MERMAID_ID = '[A-Za-z_][A-Za-z0-9_]*';
const MERMAID_LINE_FORMS: RegExp[] = [
  /^stateDiagram-v2$/,
  new RegExp(`^\\s*\\[\\*\\] --> ${MERMAID_ID}$`),
  new RegExp(`^\\s*${MERMAID_ID} --> \\[\\*\\]$`),
  new RegExp(`^\\s*state "[^"]+" as ${MERMAID_ID}( \\{)?$`),
  /^\s*\}$/,
  /^\s*--$/,
  new RegExp(`^\\s*${MERMAID_ID} : [^:;]+$`),
  new RegExp(`^\\s*${MERMAID_ID} --> ${MERMAID_ID} : [^:;]+$`),
  /^\s*classDef current [^;]+$/,
  new RegExp(`^\\s*class ${MERMAID_ID} current$`),
];

function checkMermaid(model: ChartModel, text: string): void {
  const lines = text.trimEnd().split('\n');
  for (const line of lines) {
    // Mermaid swaps entity codes (`#58;`) for placeholders before lexing; do the same.
    const lexed = line.replace(/#\w+;/g, 'E');
    expect(
      MERMAID_LINE_FORMS.some((re) => re.test(lexed)),
      `unknown Mermaid statement: ${line}`,
    ).toBe(true);
  }
  const opens = lines.filter((l) => l.endsWith('{')).length;
  const closes = lines.filter((l) => l.trim() === '}').length;
  expect(opens).toBe(closes);
  const ids = mermaidIds(model);
  for (const s of model.states) {
    const mid = ids.get(s.id);
    expect(mid).toMatch(new RegExp(`^${MERMAID_ID}$`));
    expect(
      lines.some((l) => l.trim().startsWith(`state "${s.key}`) && l.includes(` as ${mid}`)),
      s.id,
    ).toBe(true);
    if (s.initial !== undefined) expect(lines).toContain(`${'  '.repeat(depth(model, s.id) + 2)}[*] --> ${ids.get(s.initial)}`);
  }
  for (const t of model.transitions) {
    for (const target of t.targets.length > 0 ? t.targets : [t.source]) {
      expect(lines).toContain(`  ${ids.get(t.source)} --> ${ids.get(target)} : ${mermaidText(transitionLabel(t))}`);
    }
  }
}

function depth(model: ChartModel, id: string): number {
  let d = 0;
  for (let s = model.states.find((x) => x.id === id); s?.parent !== undefined; s = model.states.find((x) => x.id === s?.parent)) d++;
  return d;
}

function checkDot(model: ChartModel, dot: string): void {
  expect(dot.startsWith(`digraph "${model.id}" {`)).toBe(true);
  expect((dot.match(/\{/g) ?? []).length).toBe((dot.match(/\}/g) ?? []).length);
  const lines = dot.split('\n');
  for (const s of model.states) {
    const line = lines.find((l) => l.includes(`id="state:${s.id}"`));
    expect(line, s.id).toBeDefined();
    const isCluster = model.states.some((c) => c.parent === s.id);
    if (isCluster) {
      expect(dot).toContain(`subgraph "cluster_${s.id}" {`);
      const labelLine = lines[lines.indexOf(line ?? '') + 1] ?? '';
      expect(labelLine).toMatch(new RegExp(`label="${s.key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    } else {
      expect(line).toContain(`label="${s.key}`);
    }
  }
  model.transitions.forEach((t, i) => {
    for (const target of t.targets.length > 0 ? t.targets : [t.source]) {
      const line = lines.find((l) => l.includes(`id="edge:${t.source}->${target}:${i}"`));
      expect(line, `${t.source} -> ${target} (${t.event})`).toBeDefined();
      expect(line).toContain(`label="${transitionLabel(t)}"`);
    }
  });
}

function checkJson(model: ChartModel, json: string): void {
  const parsed = JSON.parse(json) as ChartModel;
  expect(parsed).toEqual(model);
  expect(parsed.states.map((s) => s.id)).toEqual(model.states.map((s) => s.id));
  expect(parsed.transitions.length).toBe(model.transitions.length);
}

function checkSvg(model: ChartModel, svg: string): void {
  expect(svg.startsWith('<?xml') || svg.startsWith('<svg')).toBe(true);
  expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  assertXmlBalanced(svg);
  const texts = svgTexts(svg);
  for (const s of model.states) {
    const group = svgGroup(svg, `state:${s.id}`);
    expect(group, s.id).toBeDefined();
    const label = s.type === 'parallel' && model.states.some((c) => c.parent === s.id) ? `${s.key} (parallel)` : s.key;
    expect(svgTexts(group ?? '')).toContain(s.type === 'history' ? `${s.key} (${s.history === 'deep' ? 'H*' : 'H'})` : label);
  }
  model.transitions.forEach((t, i) => {
    for (const target of t.targets.length > 0 ? t.targets : [t.source]) {
      const group = svgGroup(svg, `edge:${t.source}->${target}:${i}`);
      expect(group, `${t.source} -> ${target} (${t.event})`).toBeDefined();
      expect(svgTexts(group ?? '')).toContain(transitionLabel(t));
    }
  });
  expect(texts.length).toBeGreaterThan(0);
}

describe('chartModel', () => {
  const model = chartModel(lifecycle);
  const byId = (id: string) => model.states.find((s) => s.id === id);
  const find = (source: string, event: string) => model.transitions.filter((t) => t.source === source && t.event === event);

  it('lists every state with full dot paths, parents, types and initial children', () => {
    expect(model.id).toBe('lifecycle');
    expect(model.states.map((s) => s.id)).toEqual([
      'lifecycle',
      'lifecycle.starting',
      'lifecycle.running',
      'lifecycle.running.replica',
      'lifecycle.running.promoting',
      'lifecycle.running.primary',
      'lifecycle.running.demoted',
      'lifecycle.crashed',
      'lifecycle.stopped',
    ]);
    expect(byId('lifecycle')).toEqual({ id: 'lifecycle', key: 'lifecycle', type: 'compound', initial: 'lifecycle.starting' });
    expect(byId('lifecycle.running')).toMatchObject({ parent: 'lifecycle', type: 'compound', initial: 'lifecycle.running.replica' });
    expect(byId('lifecycle.running.demoted')).toMatchObject({ key: 'demoted', type: 'final', parent: 'lifecycle.running' });
    expect(byId('lifecycle.starting')).toMatchObject({ invokes: ['startPostgres'], tags: ['busy'], description: 'pg_ctl start' });
  });

  it('labels root-level, invoke, after, always, onDone, guarded and targetless transitions', () => {
    expect(find('lifecycle', 'shutdown')).toEqual([
      { source: 'lifecycle', targets: ['lifecycle.stopped'], event: 'shutdown', eventType: 'shutdown' },
    ]);
    expect(find('lifecycle.starting', 'done: start-pg')[0]).toMatchObject({
      targets: ['lifecycle.running'],
      eventType: 'xstate.done.actor.start-pg',
    });
    expect(find('lifecycle.starting', 'error: start-pg')[0]).toMatchObject({
      targets: ['lifecycle.crashed'],
      eventType: 'xstate.error.actor.start-pg',
    });
    expect(find('lifecycle.running.promoting', 'error: promote')[0]?.targets).toEqual(['lifecycle.crashed']);
    expect(find('lifecycle.running.replica', 'after loopWait')[0]).toMatchObject({
      targets: ['lifecycle.running.replica'],
      reenter: true,
      eventType: 'xstate.after.loopWait.lifecycle.running.replica',
    });
    expect(find('lifecycle.crashed', 'after 5000ms')[0]?.targets).toEqual(['lifecycle.starting']);
    expect(find('lifecycle.crashed', 'always')).toEqual([
      { source: 'lifecycle.crashed', targets: ['lifecycle.starting'], event: 'always', eventType: '', guard: 'canRetry' },
      { source: 'lifecycle.crashed', targets: ['lifecycle.stopped'], event: 'always', eventType: '' },
    ]);
    expect(find('lifecycle.running', 'onDone')[0]?.targets).toEqual(['lifecycle.starting']);
    expect(find('lifecycle.running.replica', 'lock.acquired').map((t) => [t.guard, t.targets])).toEqual([
      ['hasLock', ['lifecycle.running.promoting']],
      ['!hasLock', ['lifecycle.running.replica']],
    ]);
    expect(find('lifecycle.running.primary', 'lock.lost')[0]?.guard).toBe('isHealthy && !hasLock');
    expect(find('lifecycle.crashed', 'retry')[0]?.guard).toBe('guard');
    expect(find('lifecycle.running', 'pg.crashed')[0]?.actions).toEqual(['logCrash']);
    expect(find('lifecycle.running', 'tick')[0]).toMatchObject({ targets: [], actions: ['assign'] });
    expect(model.transitions).toHaveLength(16);
  });

  it('describes parallel regions, history states and cross-region targets', () => {
    const m = chartModel(monitor);
    expect(m.states[0]).toEqual({ id: 'monitor-x', key: 'monitor-x', type: 'parallel' });
    expect(m.states.find((s) => s.id === 'monitor-x.lag.hist')).toMatchObject({ type: 'history', history: 'deep' });
    expect(m.transitions.find((t) => t.event === 'resume')?.targets).toEqual(['monitor-x.lag.hist']);
    expect(m.transitions.find((t) => t.event === 'pause')).toMatchObject({ source: 'monitor-x', targets: [], actions: ['action'] });
    expect(m.transitions.find((t) => t.event === 'lag.high')?.guard).toBe('!paused');
  });

  it('is JSON-serialisable without loss', () => {
    for (const machine of Object.values(SAMPLE_MACHINES)) {
      const m = chartModel(machine);
      expect(JSON.parse(JSON.stringify(m))).toEqual(m);
    }
  });
});

describe('activeStateIds', () => {
  it('expands a state value to active ids with ancestors', () => {
    expect(activeStateIds('lifecycle', { running: 'replica' })).toEqual(['lifecycle', 'lifecycle.running', 'lifecycle.running.replica']);
    expect(activeStateIds('monitor-x', { lag: 'ok', connection: 'down' })).toEqual([
      'monitor-x',
      'monitor-x.lag',
      'monitor-x.lag.ok',
      'monitor-x.connection',
      'monitor-x.connection.down',
    ]);
    expect(activeStateIds('m', 'idle')).toEqual(['m', 'm.idle']);
  });
});

describe('every state and transition appears in every format', () => {
  for (const [name, machine] of Object.entries(SAMPLE_MACHINES)) {
    const model = chartModel(machine);
    it(`${name}: mermaid`, () => checkMermaid(model, toMermaid(model)));
    it(`${name}: dot`, () => checkDot(model, toDot(model)));
    it(`${name}: json`, () => checkJson(model, toJson(model)));
    it(`${name}: svg`, async () => checkSvg(model, await toSvg(model)));
    it(`${name}: renderChart gives the same text as the renderers`, async () => {
      expect(await renderChart(machine, 'mermaid')).toBe(toMermaid(model));
      expect(await renderChart(machine, 'dot')).toBe(toDot(model));
      expect(await renderChart(machine, 'json')).toBe(toJson(model));
      expect(await renderChart(machine, 'svg', { dotToSvg })).toBe(await toSvg(model));
    });
  }
});

describe('renderers', () => {
  it('Mermaid ids are sanitised and unique; labels keep the original names', () => {
    const model = chartModel(monitor);
    const ids = mermaidIds(model);
    expect(ids.get('monitor-x.lag.ok')).toBe('s_monitor_x_lag_ok');
    expect(new Set(ids.values()).size).toBe(model.states.length);
    const clash: ChartModel = {
      id: 'm',
      states: [
        { id: 'm', key: 'm', type: 'compound', initial: 'm.a-b' },
        { id: 'm.a-b', key: 'a-b', type: 'atomic', parent: 'm' },
        { id: 'm.a_b', key: 'a_b', type: 'atomic', parent: 'm' },
      ],
      transitions: [{ source: 'm.a-b', targets: ['m.a_b'], event: 'x;y', eventType: 'x;y' }],
    };
    const text = toMermaid(clash);
    expect(text).toContain('state "a-b" as s_m_a_b\n');
    expect(text).toContain('state "a_b" as s_m_a_b_2\n');
    expect(text).toContain('s_m_a_b --> s_m_a_b_2 : x#59;y\n');
    expect(mermaidText('done: a;b\nc')).toBe('done#58; a#59;b c');
  });

  it('Mermaid marks parallel regions, final states and invokes', () => {
    const text = toMermaid(chartModel(monitor));
    expect(text).toMatch(/\n {6}state "hist \(H\*\)" as s_monitor_x_lag_hist\n {4}\}\n {4}--\n {4}state "connection"/);
    const life = toMermaid(chartModel(lifecycle));
    expect(life).toContain('\n      s_lifecycle_running_demoted --> [*]\n');
    expect(life).toContain('\n    s_lifecycle_starting : invoke startPostgres\n');
  });

  it('highlights the current states in Mermaid, DOT and SVG', async () => {
    const model = chartModel(lifecycle);
    const highlight = activeStateIds('lifecycle', { running: 'replica' });
    const mer = toMermaid(model, { highlight });
    expect(mer).toContain('classDef current fill:#f96');
    expect(mer).toContain('class s_lifecycle_running_replica current');
    expect(mer).toContain('class s_lifecycle_running current');
    expect(toMermaid(model)).not.toContain('classDef');
    const dot = toDot(model, { highlight });
    expect(dot).toMatch(/"lifecycle\.running\.replica" \[[^\n]*fillcolor="#ff9966"/);
    expect(dot).not.toMatch(/"lifecycle\.crashed" \[[^\n]*fillcolor/);
    const svg = await renderChart(lifecycle, 'svg', { highlight, dotToSvg });
    expect(svgGroup(svg, 'state:lifecycle.running.replica')).toContain('fill="#ff9966"');
    expect(svgGroup(svg, 'state:lifecycle.crashed')).not.toContain('#ff9966');
  });

  it('DOT attaches edges of compound states to their cluster', () => {
    const dot = toDot(chartModel(lifecycle));
    expect(dot).toContain(
      '"lifecycle.starting" -> "lifecycle.running#initial" [id="edge:lifecycle.starting->lifecycle.running:1", label="done: start-pg", lhead="cluster_lifecycle.running", class="t1"];',
    );
    expect(dot).toContain('ltail="cluster_lifecycle.running"');
    expect(dot).toMatch(
      /"lifecycle\.running#initial" -> "lifecycle\.running#initial" \[[^\n]*label="tick \(internal\)", style=dashed, class="t\d+"\]/,
    );
  });

  it('rejects an unknown format', async () => {
    expect(CHART_FORMATS).toEqual(['mermaid', 'dot', 'svg', 'json']);
    expect(isChartFormat('svg')).toBe(true);
    expect(isChartFormat('png')).toBe(false);
    await expect(renderChart(lifecycle, 'png' as never)).rejects.toThrow(/unknown chart format: png/);
  });

  it('lays out svg only through the given dotToSvg (the library entry never loads Graphviz)', async () => {
    await expect(renderChart(lifecycle, 'svg')).rejects.toThrow(
      /svg needs opts\.dotToSvg: import \{ dotToSvg \} from '@ha\/machines\/svg'/,
    );
    const seen: string[] = [];
    const svg = await renderChart(lifecycle, 'svg', {
      highlight: ['lifecycle.starting'],
      dotToSvg: async (dot) => (seen.push(dot), '<svg/>'),
    });
    expect(svg).toBe('<svg/>');
    expect(seen).toEqual([toDot(chartModel(lifecycle), { highlight: ['lifecycle.starting'] })]);
  });
});

/** The project's machines, when their files exist (written by other engineers). */
const PROJECT_MACHINE_FILES = ['switchover.ts', 'restart.ts', 'database.ts'];
const machinesDir = fileURLToPath(new URL('../../packages/machines/src/machines/', import.meta.url));

function isMachine(v: unknown): v is AnyStateMachine {
  return typeof v === 'object' && v !== null && 'root' in v && 'definition' in v && typeof (v as { id?: unknown }).id === 'string';
}

describe('project machines', () => {
  for (const file of PROJECT_MACHINE_FILES) {
    const path = `${machinesDir}${file}`;
    it.skipIf(!existsSync(path))(`packages/machines/src/machines/${file}: every state appears in every format`, async () => {
      const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
      const machines = Object.values(mod).filter(isMachine);
      expect(machines.length, `no exported machine in ${file}`).toBeGreaterThan(0);
      for (const machine of machines) {
        const model = chartModel(machine);
        expect(model.states.length).toBeGreaterThan(1);
        checkMermaid(model, await renderChart(machine, 'mermaid'));
        checkDot(model, await renderChart(machine, 'dot'));
        checkJson(model, await renderChart(machine, 'json'));
        checkSvg(model, await renderChart(machine, 'svg', { dotToSvg }));
      }
    });
  }
});
