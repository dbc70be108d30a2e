import { describe, expect, it } from 'vitest';
import { parseCollectorFile } from '../../src/exporter/config-load.ts';
import { ExpositionBuilder, RenderedFamily, type Family } from '../../src/exporter/exposition.ts';
import { buildFamilies, renderFamilies, type ArrayResult, type QueryResult, type RenderCache } from '../../src/exporter/result-families.ts';

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const collectors = parseCollectorFile(
  [
    'a:',
    '  name: m',
    '  query: q1',
    '  metrics:',
    '    - zeta: { usage: LABEL }',
    '    - alpha: { usage: LABEL, rename: beta }',
    '    - n: { usage: COUNTER, description: "n \\\\ help" }',
    '    - g: { usage: GAUGE, scale: 0.001 }',
    '    - h: { usage: HISTOGRAM, bucket: [1, 100] }',
    '    - d: { usage: DISCARD }',
    'b:',
    '  name: m',
    '  query: q2',
    '  metrics:',
    '    - zeta: { usage: LABEL }',
    '    - alpha: { usage: LABEL, rename: beta }',
    '    - n: { usage: GAUGE }',
    '    - g: { usage: GAUGE }',
    'c:',
    '  name: plain',
    '  query: q3',
    '  metrics:',
    '    - v: { usage: GAUGE }',
    '    - w: { usage: GAUGE }',
    '',
  ].join('\n'),
  'x.yml',
);

function result(rand: () => number, labels: boolean, rows: number): QueryResult {
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const texts = ['', 'a', 'b', 'ab', 'a"b', 'x\\y', 'new\nline', 'é', 'z'];
  const nums = [
    0,
    -0,
    1,
    2.5,
    1e6,
    1234567,
    1e-5,
    0.0001,
    10431787000,
    -3,
    NaN,
    Infinity,
    null,
    '42',
    '1.5e3',
    'abc',
    true,
    new Date(1700000000900),
  ];
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < rows; i++) {
    const r: Record<string, unknown> = { n: pick(nums), g: pick(nums), h: rand() * 200, d: 1, v: pick(nums), w: pick(nums) };
    if (labels) Object.assign(r, { zeta: pick(texts), alpha: rand() < 0.2 ? null : pick([...texts, 7, 2.5]) });
    out.push(r);
  }
  const names = labels ? ['zeta', 'alpha', 'n', 'g', 'h', 'd'] : ['v', 'w'];
  return { rows: out, columns: names.map((name) => ({ name, type: name === 'alpha' ? 701 : 25 })) };
}

function renderAll(constLabels: [string, string][], builderLabels: [string, string][], seed: number, fast: boolean) {
  const rand = rng(seed);
  const b = new ExpositionBuilder(builderLabels);
  const [a, bb, c] = collectors;
  for (const [def, labels] of [
    [a!, true],
    [bb!, true],
    [c!, false],
  ] as const) {
    const res = result(rand, labels, Math.floor(rand() * 40));
    const built = fast ? renderFamilies(def, res, constLabels) : buildFamilies(def, res);
    for (const f of built.families) b.add(f);
  }
  // A family conflicting by type with a rendered one, and one with a rendered family's name.
  b.add({ name: 'm_g', help: 'other', type: 'counter', samples: [{ labels: [], value: 1 }] });
  b.add({ name: 'plain_v', help: 'other', type: 'gauge', samples: [{ labels: [], value: 3 }] });
  return { text: b.render(), dropped: b.dropped, from: [...b.droppedFrom].sort(), series: b.seriesCount };
}

describe('rendered families (fast path) against generic families', () => {
  const cases: [string, [string, string][]][] = [
    ['no constant labels', []],
    [
      'constant labels before, between and after own labels',
      [
        ['aaa', 'x"'],
        ['c', 'v'],
        ['zz', '\\'],
      ],
    ],
    ['a constant label clashing with a collector label', [['zeta', 'const']]],
  ];
  for (const [what, constLabels] of cases) {
    it(`gives byte-identical output, drops and series counts: ${what}`, () => {
      for (let seed = 1; seed <= 60; seed++) {
        expect(renderAll(constLabels, constLabels, seed, true)).toEqual(renderAll(constLabels, constLabels, seed, false));
      }
    });
  }

  it('falls back to generic samples when the builder has other constant labels', () => {
    for (let seed = 1; seed <= 20; seed++)
      expect(renderAll([['c', 'v']], [['e', 'x']], seed, true)).toEqual(renderAll([], [['e', 'x']], seed, false));
  });

  it('exposes the generic samples (duplicates included) and counts', () => {
    const res = result(rng(7), true, 30);
    const generic = buildFamilies(collectors[0]!, res);
    const fast = renderFamilies(collectors[0]!, res, [['c', 'v']]);
    expect(fast.sampleCount).toBe(generic.sampleCount);
    expect(fast.warnings).toEqual(generic.warnings);
    expect(fast.families.map((f) => f.name)).toEqual(generic.families.map((f) => f.name));
    const strip = (fs: Family[]) => fs.map((f) => ({ name: f.name, help: f.help, type: f.type, samples: f.samples }));
    expect(strip(fast.families)).toEqual(strip(generic.families));
    expect(fast.families[0]).toBeInstanceOf(RenderedFamily);
  });

  it('reports the same errors and warnings', () => {
    const [a] = collectors;
    const missingLabel: QueryResult = { rows: [{ n: 1 }], columns: [{ name: 'n', type: 23 }] };
    expect(() => renderFamilies(a!, missingLabel)).toThrow(/missing label column zeta/);
    const partial: QueryResult = {
      rows: [{ zeta: 'a', alpha: 'b', n: 1 }],
      columns: ['zeta', 'alpha', 'n'].map((name) => ({ name, type: 25 })),
    };
    expect(renderFamilies(a!, partial).warnings).toEqual(buildFamilies(a!, partial).warnings);
    const badHist: QueryResult = {
      rows: [{ zeta: 'a', alpha: 'b', h: Infinity }],
      columns: ['zeta', 'alpha', 'h'].map((name) => ({ name, type: 701 })),
    };
    expect(() => renderFamilies(a!, badHist)).toThrow(/non-finite/);
  });

  it('gives the same output with a per-collector cache across results (same labels, new labels, fewer rows)', () => {
    const text = (fams: Family[], constLabels: [string, string][]) => {
      const b = new ExpositionBuilder(constLabels);
      for (const f of fams) b.add(f);
      return { text: b.render(), dropped: b.dropped, series: b.seriesCount };
    };
    for (const constLabels of [[], [['c', 'v']]] as [string, string][][]) {
      for (let seed = 1; seed <= 30; seed++) {
        const rand = rng(seed);
        for (const [def, labels] of [
          [collectors[0]!, true],
          [collectors[2]!, false],
        ] as const) {
          const cache: RenderCache = {};
          const first = result(rand, labels, Math.floor(rand() * 30));
          // Same label values, new values; then other rows; then no rows; then one row.
          const sameLabels: QueryResult = {
            columns: first.columns,
            rows: first.rows.map((r) => ({ ...r, n: rand() * 10, g: String(Math.floor(rand() * 100)), v: rand(), w: -1 })),
          };
          const results = [
            first,
            sameLabels,
            result(rand, labels, Math.floor(rand() * 30)),
            result(rand, labels, 0),
            result(rand, labels, 1),
          ];
          for (const res of results) {
            expect(text(renderFamilies(def, res, constLabels, cache).families, constLabels)).toEqual(
              text(renderFamilies(def, res, constLabels).families, constLabels),
            );
          }
        }
      }
    }
  });

  it('gives the same output when chunks of a large family are reused (same values, a few changed, all changed)', () => {
    const text = (fams: Family[]) => {
      const b = new ExpositionBuilder([['c', 'v']]);
      for (const f of fams) b.add(f);
      return b.render();
    };
    for (let seed = 1; seed <= 8; seed++) {
      const rand = rng(seed);
      for (const [def, labels] of [
        [collectors[0]!, true],
        [collectors[2]!, false],
      ] as const) {
        const cache: RenderCache = {};
        const first = result(rand, labels, 100 + Math.floor(rand() * 500));
        const copy: QueryResult = { columns: first.columns, rows: first.rows.map((r) => ({ ...r })) };
        const few: QueryResult = {
          columns: first.columns,
          rows: first.rows.map((r) => (rand() < 0.01 ? { ...r, n: rand(), g: '7', v: 'x', w: 1e7 } : { ...r })),
        };
        const all: QueryResult = {
          columns: first.columns,
          rows: first.rows.map((r) => ({ ...r, n: rand(), g: String(rand()), v: rand(), w: -rand() })),
        };
        for (const res of [first, copy, few, few, all, first, copy]) {
          expect(text(renderFamilies(def, res, [['c', 'v']], cache).families)).toEqual(
            text(renderFamilies(def, res, [['c', 'v']]).families),
          );
        }
      }
    }
  });

  it("reads rows as arrays (the exporter's form) like object rows, a repeated column name taking the last value", () => {
    const [a] = collectors;
    for (let seed = 1; seed <= 20; seed++) {
      const res = result(rng(seed), true, Math.floor(rng(seed + 100)() * 40));
      const arrays: ArrayResult = { columns: res.columns, values: res.rows.map((row) => res.columns.map((c) => row[c.name])) };
      expect(renderFamilies(a!, arrays, [['c', 'v']]).families.map((f) => (f as RenderedFamily).lines)).toEqual(
        renderFamilies(a!, res, [['c', 'v']]).families.map((f) => (f as RenderedFamily).lines),
      );
    }
    const cols = ['zeta', 'alpha', 'n', 'n'].map((name) => ({ name, type: 25 }));
    const twice: ArrayResult = { columns: cols, values: [['a', 'b', '1', '2']] };
    const asObject: QueryResult = { columns: cols, rows: [{ zeta: 'a', alpha: 'b', n: '2' }] };
    expect((renderFamilies(a!, twice).families[0] as RenderedFamily).lines).toBe(
      (renderFamilies(a!, asObject).families[0] as RenderedFamily).lines,
    );
    expect((renderFamilies(a!, twice).families[0] as RenderedFamily).lines).toBe('m_n{beta="b",zeta="a"} 2\n');
  });
});
