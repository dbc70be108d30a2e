import { describe, expect, it } from 'vitest';
import { parseCollectorFile } from '../../src/exporter/config-load.ts';
import { labelValue, sampleValue } from '../../src/exporter/convert.ts';
import { ExpositionBuilder } from '../../src/exporter/exposition.ts';
import { formatGoDuration, formatGoFloat, parseGoFloat } from '../../src/exporter/go-float.ts';
import { buildFamilies } from '../../src/exporter/result-families.ts';
import type { ColumnDef } from '../../src/exporter/types.ts';

describe('Go number formats', () => {
  it.each([
    [0, '0'],
    [1, '1'],
    [0.3, '0.3'],
    [123456.7, '123456.7'],
    [1234567, '1.234567e+06'],
    [1e6, '1e+06'],
    [0.00001, '1e-05'],
    [0.0001, '0.0001'],
    [10431787000, '1.0431787e+10'],
    [NaN, 'NaN'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
    [-2.5, '-2.5'],
  ])('formats %s as %s', (x, s) => expect(formatGoFloat(x)).toBe(s));

  it.each([
    [0.1, '100ms'],
    [1.5, '1.5s'],
    [2, '2s'],
    [0, '0s'],
    [120, '2m0s'],
    [3600, '1h0m0s'],
    [0.0015, '1.5ms'],
    [90.5, '1m30.5s'],
  ])('duration %s is %s', (x, s) => expect(formatGoDuration(x)).toBe(s));

  it('parses floats like strconv.ParseFloat', () => {
    expect(parseGoFloat('1e-3')).toBe(0.001);
    expect(parseGoFloat('Infinity')).toBe(Infinity);
    expect(parseGoFloat('-inf')).toBe(-Infinity);
    expect(parseGoFloat('nan')).toBeNaN();
    expect(parseGoFloat('12abc')).toBeUndefined();
    expect(parseGoFloat('')).toBeUndefined();
  });
});

describe('value conversion', () => {
  const c = (over: Partial<ColumnDef> = {}): ColumnDef => ({ name: 'v', usage: 'GAUGE', scale: 1, ...over });
  it('scales numbers and numeric text, not booleans or timestamps; NULL is default × scale or NaN', () => {
    expect(sampleValue(5, c({ scale: 1e-3 }))).toBe(0.005);
    expect(sampleValue('12345678901234', c())).toBe(12345678901234);
    expect(sampleValue('abc', c())).toBeNaN();
    expect(sampleValue(true, c({ scale: 10 }))).toBe(1);
    expect(sampleValue(new Date(1700000000900), c({ scale: 10 }))).toBe(1700000000);
    expect(sampleValue(null, c())).toBeNaN();
    expect(sampleValue(null, c({ defaultValue: 2, scale: 1000 }))).toBe(2000);
    expect(sampleValue({ a: 1 }, c())).toBeNaN();
  });
  it('formats labels', () => {
    expect(labelValue(null)).toBe('');
    expect(labelValue(false)).toBe('false');
    expect(labelValue(1e6, 701)).toBe('1e+06');
    expect(labelValue(42, 23)).toBe('42');
    expect(labelValue(new Date(1700000000000))).toBe('1700000000');
  });
});

describe('result families and exposition', () => {
  const [c] = parseCollectorFile(
    'q:\n  name: app\n  query: SELECT 1\n  metrics:\n    - db: { usage: LABEL }\n    - state: { usage: LABEL, rename: job_state }\n    - n: { usage: COUNTER, description: "jobs" }\n    - age: { usage: HISTOGRAM, bucket: [1, 10], description: "age" }\n    - x: { usage: DISCARD }\n',
    'x.yml',
  );
  const rows = [
    { db: 'b', state: 'run', n: '3', age: 0.5, x: 1 },
    { db: 'a', state: null, n: '2', age: 10, x: 1 },
    { db: 'a', state: null, n: '2', age: 11, x: 1 },
  ];
  const cols = ['db', 'state', 'n', 'age', 'x'].map((name) => ({ name, type: 25 }));

  it('builds counters with labels in config order and snapshot histograms', () => {
    const r = buildFamilies(c!, { rows, columns: cols });
    expect(r.families.map((f) => f.name)).toEqual(['app_n', 'app_age_bucket', 'app_age_count', 'app_age_sum']);
    const b = new ExpositionBuilder([['env', 'x']]);
    for (const f of r.families) b.add(f);
    const text = b.render();
    expect(text).toBe(
      [
        '# HELP app_age_bucket age (cumulative bucket)',
        '# TYPE app_age_bucket gauge',
        'app_age_bucket{db="a",env="x",job_state="",le="+Inf"} 2',
        'app_age_bucket{db="a",env="x",job_state="",le="1"} 0',
        'app_age_bucket{db="a",env="x",job_state="",le="10"} 1',
        'app_age_bucket{db="b",env="x",job_state="run",le="+Inf"} 1',
        'app_age_bucket{db="b",env="x",job_state="run",le="1"} 1',
        'app_age_bucket{db="b",env="x",job_state="run",le="10"} 1',
        '# HELP app_age_count age (observation count)',
        '# TYPE app_age_count gauge',
        'app_age_count{db="a",env="x",job_state=""} 2',
        'app_age_count{db="b",env="x",job_state="run"} 1',
        '# HELP app_age_sum age (observation sum)',
        '# TYPE app_age_sum gauge',
        'app_age_sum{db="a",env="x",job_state=""} 21',
        'app_age_sum{db="b",env="x",job_state="run"} 0.5',
        '# HELP app_n jobs',
        '# TYPE app_n counter',
        'app_n{db="a",env="x",job_state=""} 2',
        'app_n{db="b",env="x",job_state="run"} 3',
        '',
      ].join('\n'),
    );
    // Two rows with the same labels: the second app_n series is a duplicate and was dropped.
    expect(b.dropped).toBe(1);
  });

  it('fails the collector when a label column is missing, warns for a missing value column', () => {
    expect(() => buildFamilies(c!, { rows: [{ n: 1 }], columns: [{ name: 'n', type: 23 }] })).toThrow(/missing label column db/);
    const r = buildFamilies(c!, { rows: [{ db: 'a', state: 's', n: 1 }], columns: cols.slice(0, 3) });
    expect(r.warnings.join()).toContain('missing metric column age');
  });

  it('escapes HELP and label values, writes empty HELP with a trailing space, drops type conflicts', () => {
    const b = new ExpositionBuilder();
    b.add({ name: 'm', help: 'a\\b\nc', type: 'gauge', samples: [{ labels: [['l', 'x"y\\z\n']], value: NaN }] });
    b.add({ name: 'm', help: 'other', type: 'counter', samples: [{ labels: [['l', 'q']], value: 1 }] });
    b.add({ name: 'e', help: '', type: 'gauge', samples: [{ labels: [], value: 1 }] });
    expect(b.render()).toBe('# HELP e \n# TYPE e gauge\ne 1\n# HELP m a\\\\b\\nc\n# TYPE m gauge\nm{l="x\\"y\\\\z\\n"} NaN\n');
    expect(b.dropped).toBe(1);
  });
});
