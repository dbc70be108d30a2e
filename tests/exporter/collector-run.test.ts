import { describe, expect, it } from 'vitest';
import { CollectorRun, type QueryFn } from '../../src/exporter/collector-run.ts';
import { parseCollectorFile } from '../../src/exporter/config-load.ts';
import type { QueryResult } from '../../src/exporter/result-families.ts';

const def = (extra = '') => parseCollectorFile(`q:\n  query: main\n${extra}  metrics:\n    - v: { usage: GAUGE }\n`, 'x.yml')[0]!;
const bool = (b: boolean | null): QueryResult => ({ rows: [{ p: b }], columns: [{ name: 'p', type: 16 }] });
const main: QueryResult = { rows: [{ v: 1 }, { v: 2 }], columns: [{ name: 'v', type: 23 }] };

function fake(answers: Record<string, () => QueryResult>) {
  const calls: string[] = [];
  const fn: QueryFn = async (text) => {
    calls.push(text);
    const a = answers[text];
    if (!a) throw new Error(`unexpected ${text}`);
    return a();
  };
  return { fn, calls };
}
const noWarn = () => undefined;

describe('collector execution', () => {
  it('serves from cache while now - lastRun <= ttl, and counts visits and rows', async () => {
    const run = new CollectorRun(def('  ttl: 10\n'), false);
    const q = fake({ main: () => main });
    await run.visit(q.fn, 100, noWarn);
    const hit = await run.visit(q.fn, 110, noWarn);
    expect(hit.fromCache).toBe(true);
    expect(hit.families[0]?.samples).toHaveLength(2);
    await run.visit(q.fn, 110.5, noWarn);
    expect(q.calls).toEqual(['main', 'main']);
    expect(run.stats).toMatchObject({ total: 3, rows: 2, metrics: 2, errors: 0, ttlLeftSeconds: 10 });
  });

  it('bypasses the cache when disabled', async () => {
    const run = new CollectorRun(def('  ttl: 10\n'), true);
    const q = fake({ main: () => main });
    await run.visit(q.fn, 100, noWarn);
    await run.visit(q.fn, 101, noWarn);
    expect(q.calls).toHaveLength(2);
  });

  it('skips on false, NULL or no rows; errors on a non-boolean or several rows', async () => {
    const d = def('  predicate_queries:\n    - { name: p, predicate_query: pred }\n');
    for (const r of [bool(false), bool(null), { rows: [], columns: [{ name: 'p', type: 16 }] }]) {
      const run = new CollectorRun(d, true);
      const res = await run.visit(fake({ pred: () => r, main: () => main }).fn, 1, noWarn);
      expect(res.skipped).toBe(true);
      expect(res.error).toBeUndefined();
      expect(run.stats.skips).toBe(1);
    }
    for (const r of [
      { rows: [{ p: 1 }], columns: [{ name: 'p', type: 23 }] },
      { rows: [{ p: true }, { p: true }], columns: [{ name: 'p', type: 16 }] },
    ]) {
      const run = new CollectorRun(d, true);
      const res = await run.visit(fake({ pred: () => r, main: () => main }).fn, 1, noWarn);
      expect(res.error?.message).toMatch(/predicate \[p\]/);
      expect(run.stats.errors).toBe(1);
    }
  });

  it('caches a predicate verdict for its own ttl', async () => {
    const run = new CollectorRun(def('  predicate_queries:\n    - { predicate_query: pred, ttl: 5 }\n'), true);
    const q = fake({ pred: () => bool(true), main: () => main });
    await run.visit(q.fn, 100, noWarn);
    await run.visit(q.fn, 104.9, noWarn);
    await run.visit(q.fn, 105, noWarn);
    expect(q.calls).toEqual(['pred', 'main', 'main', 'pred', 'main']);
  });

  it('publishes nothing on failure and replays the failure for the ttl', async () => {
    const run = new CollectorRun(def('  ttl: 10\n'), false);
    const q = fake({});
    const r1 = await run.visit(q.fn, 1, noWarn);
    const r2 = await run.visit(q.fn, 2, noWarn);
    expect(r1.error).toBeDefined();
    expect(r2.error).toBeDefined();
    expect(r2.families).toEqual([]);
    expect(q.calls).toHaveLength(1);
    expect(run.stats.errors).toBe(2);
  });

  it('gives predicates and the main query one deadline (timeout seconds)', async () => {
    const run = new CollectorRun(def('  timeout: 0.5\n  predicate_queries:\n    - { predicate_query: pred }\n'), true);
    const deadlines: (number | undefined)[] = [];
    const fn: QueryFn = async (text, deadline) => {
      deadlines.push(deadline);
      return text === 'pred' ? bool(true) : main;
    };
    const before = Date.now();
    await run.visit(fn, 1, noWarn);
    expect(deadlines[0]).toBe(deadlines[1]);
    expect(deadlines[0]! - before).toBeGreaterThanOrEqual(490);
    expect(deadlines[0]! - before).toBeLessThan(600);
    const unlimited = new CollectorRun(def('  timeout: -1\n'), true);
    const seen: (number | undefined)[] = [];
    await unlimited.visit(async (_t, d) => (seen.push(d), main), 1, noWarn);
    expect(seen).toEqual([undefined]);
  });
});
