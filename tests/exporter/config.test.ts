import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseCollectorFile } from '../../src/exporter/config-load.ts';
import { REFERENCE_DIR, REFERENCE_SKIP, referencePath } from '../support/reference.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
/** The reference collector set (pg_exporter-config in HA_REFERENCE_DIR); tests using it skip without it. */
const SHARED = referencePath('pg_exporter-config');
const DEFAULTS = resolve(repoRoot, 'collectors');

const ok = (extra = '') => `q1:\n  query: SELECT 1 AS v\n${extra}  metrics:\n    - v: { usage: GAUGE }\n`;

let dirs: string[] = [];
const tempDir = (files: Record<string, string>) => {
  const d = mkdtempSync(join(tmpdir(), 'exporter-cfg-'));
  dirs.push(d);
  for (const [n, t] of Object.entries(files)) writeFileSync(join(d, n), t);
  return d;
};
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe.skipIf(!REFERENCE_DIR)(`the reference collector set ${REFERENCE_SKIP}`, () => {
  const files = REFERENCE_DIR ? readdirSync(SHARED).filter((f) => /\.ya?ml$/.test(f)) : [];
  it.each(files)('loads shared %s alone without error', (f) => {
    const cfg = loadConfig(join(SHARED, f));
    expect(cfg.warnings).toEqual([]);
    if (f !== '0000-doc.yml') expect(cfg.collectors.length).toBeGreaterThan(0);
  });

  it('loads the shared directory without warnings, with default priorities by file rank', () => {
    const cfg = loadConfig(SHARED);
    expect(cfg.warnings).toEqual([]);
    expect(cfg.collectors.length).toBe(79);
    const pg = cfg.collectors.find((c) => c.branch === 'pg_primary_only')!;
    expect(pg.name).toBe('pg');
    expect(pg.priority).toBe(102); // 0000-doc.yml (rank 1) loads with no collector
    expect(pg.timeoutSeconds).toBe(0.1);
    const ckpt = cfg.collectors.find((c) => c.branch === 'pg_checkpointer_17')!;
    expect(ckpt.columns.find((c) => c.name === 'write_time')?.scaleText).toBe('1e-3');
    expect(ckpt.columns.find((c) => c.name === 'write_time')?.scale).toBe(0.001);
    expect(cfg.collectors.find((c) => c.branch === 'pg_meta_10')?.minVersion).toBe(90600); // written 090600
  });
});

describe('collector configuration loading', () => {
  it('loads the project default set for PostgreSQL 12 to 17', () => {
    const cfg = loadConfig(DEFAULTS);
    expect(cfg.warnings).toEqual([]);
    const names = new Set(cfg.collectors.map((c) => c.name));
    for (const n of [
      'pg_instance',
      'pg_sessions',
      'pg_lockcount',
      'pg_replication',
      'pg_slot',
      'pg_walstat',
      'pg_archiving',
      'pg_ckpt',
      'pg_bgw',
      'pg_database',
      'pg_tables',
      'pg_indexes',
      'pg_settings',
    ]) {
      expect(names.has(n), n).toBe(true);
    }
    for (const c of cfg.collectors) expect(c.minVersion === 0 || c.minVersion >= 120000).toBe(true);
  });

  it('skips an invalid file in a directory with a warning naming the file and the problem', () => {
    const d = tempDir({
      '01-good.yml': ok(),
      '02-bad.yml': 'q2:\n  query: SELECT 1\n  metrics:\n    - v: { usage: BOGUS }\n',
      '03-x.yaml': ok().replace('q1', 'q3'),
      'README.txt': 'ignored',
    });
    const cfg = loadConfig(d);
    expect(cfg.collectors.map((c) => c.branch)).toEqual(['q1', 'q3']);
    expect(cfg.warnings).toHaveLength(1);
    expect(cfg.warnings[0]).toContain('02-bad.yml');
    expect(cfg.warnings[0]).toContain('usage must be');
    expect(cfg.collectors.map((c) => c.priority)).toEqual([101, 102]);
  });

  it('lets a later file replace an earlier branch as a whole', () => {
    const d = tempDir({ 'a.yml': ok('  ttl: 5\n'), 'b.yml': ok('  desc: second\n') });
    const [c] = loadConfig(d).collectors;
    expect(c?.desc).toBe('second');
    expect(c?.ttlSeconds).toBe(0);
    expect(c?.source).toBe('b.yml');
  });

  it('fails when nothing loads, and for an invalid single file', () => {
    const d = tempDir({ 'bad.yml': 'q: [' });
    expect(() => loadConfig(d)).toThrow(ConfigError);
    expect(() => loadConfig(join(d, 'bad.yml'))).toThrow(/bad\.yml/);
    expect(() => loadConfig(join(d, 'missing.yml'))).toThrow(/fail loading config/);
  });

  it.each([
    ['blank query', 'q:\n  query: " "\n  metrics:\n    - v: { usage: GAUGE }\n', /query is blank/],
    ['negative ttl', ok('  ttl: -1\n'), /ttl must be >= 0/],
    ['no value column', 'q:\n  query: SELECT 1\n  metrics:\n    - v: { usage: LABEL }\n', /defines no GAUGE\/COUNTER\/HISTOGRAM/],
    ['duplicate column', 'q:\n  query: SELECT 1\n  metrics:\n    - v: { usage: GAUGE }\n    - v: { usage: COUNTER }\n', /duplicate column/],
    [
      'duplicate label after rename',
      'q:\n  query: SELECT 1\n  metrics:\n    - a: { usage: LABEL, rename: x }\n    - x: { usage: LABEL }\n    - v: { usage: GAUGE }\n',
      /duplicate label/,
    ],
    ['bad scale', 'q:\n  query: SELECT 1\n  metrics:\n    - v: { usage: GAUGE, scale: abc }\n', /not a float/],
    ['bad label name', 'q:\n  query: SELECT 1\n  metrics:\n    - __a: { usage: LABEL }\n    - v: { usage: GAUGE }\n', /invalid label name/],
    ['histogram without buckets', 'q:\n  query: SELECT 1\n  metrics:\n    - v: { usage: HISTOGRAM }\n', /no bucket/],
    ['decreasing buckets', 'q:\n  query: SELECT 1\n  metrics:\n    - v: { usage: HISTOGRAM, bucket: [2, 1] }\n', /strictly increasing/],
    [
      'histogram with le label',
      'q:\n  query: SELECT 1\n  metrics:\n    - le: { usage: LABEL }\n    - v: { usage: HISTOGRAM, bucket: [1] }\n',
      /label named le/,
    ],
    [
      'colliding families',
      'q:\n  query: SELECT 1\n  metrics:\n    - v: { usage: HISTOGRAM, bucket: [1] }\n    - v_count: { usage: GAUGE }\n',
      /defined twice/,
    ],
    ['null branch', 'q:\n', /is null/],
    ['duplicate key', `${ok()}${ok()}`, /YAML error/],
    [
      'two keys in a column item',
      'q:\n  query: SELECT 1\n  metrics:\n    - { a: { usage: GAUGE }, b: { usage: GAUGE } }\n',
      /exactly one column/,
    ],
  ])('rejects %s', (_n, text, re) => {
    expect(() => parseCollectorFile(text, 'x.yml')).toThrow(re);
  });

  it('reads usage case-insensitively, keeps scale/default text, scales nothing at load', () => {
    const [c] = parseCollectorFile(
      'q:\n  query: SELECT 1\n  timeout: -1\n  metrics:\n    - v: { usage: " gauge ", scale: 1000, default: "0.5" }\n',
      'x.yml',
    );
    expect(c?.columns[0]).toMatchObject({ usage: 'GAUGE', scaleText: '1000', scale: 1000, defaultText: '0.5', defaultValue: 0.5 });
    expect(c?.timeoutSeconds).toBe(-1);
  });
});
