import { describe, expect, it } from 'vitest';
import { parseCollectorFile } from '../../src/exporter/config-load.ts';
import { planCollectors, rejectReason, type PlanContext } from '../../src/exporter/planner.ts';
import type { ServerFacts } from '../../src/exporter/types.ts';

const facts = (over: Partial<ServerFacts> = {}): ServerFacts => ({
  version: 150004,
  inRecovery: false,
  dbname: 'app',
  username: 'mon',
  databases: ['app'],
  schemas: ['public', 'monitor'],
  extensions: ['plpgsql'],
  ...over,
});
const ctx = (over: Partial<PlanContext> = {}, f: Partial<ServerFacts> = {}): PlanContext => ({
  facts: facts(f),
  cliTags: [],
  pooler: false,
  forked: false,
  ...over,
});
const col = (branch: string, extra: string) =>
  parseCollectorFile(`${branch}:\n  query: SELECT 1 AS v\n${extra}  metrics:\n    - v: { usage: GAUGE }\n`, 'x.yml')[0]!;

describe('planning', () => {
  it('applies [min, max) version ranges and ignores them while the version is unknown', () => {
    const c = col('c', '  min_version: 140000\n  max_version: 160000\n');
    expect(rejectReason(c, ctx({}, { version: 140000 }))).toBeUndefined();
    expect(rejectReason(c, ctx({}, { version: 159999 }))).toBeUndefined();
    expect(rejectReason(c, ctx({}, { version: 160000 }))).toMatch(/max_version/);
    expect(rejectReason(c, ctx({}, { version: 130000 }))).toMatch(/min_version/);
    expect(rejectReason(c, ctx({}, { version: 0 }))).toBeUndefined();
  });

  it('evaluates role tags and their synonyms', () => {
    for (const t of ['primary', 'master', 'leader']) {
      expect(rejectReason(col('c', `  tags: [${t}]\n`), ctx())).toBeUndefined();
      expect(rejectReason(col('c', `  tags: [${t}]\n`), ctx({}, { inRecovery: true }))).toBeDefined();
    }
    for (const t of ['replica', 'standby', 'slave']) {
      expect(rejectReason(col('c', `  tags: [${t}]\n`), ctx())).toBeDefined();
      expect(rejectReason(col('c', `  tags: [${t}]\n`), ctx({}, { inRecovery: true }))).toBeUndefined();
    }
  });

  it('runs cluster collectors only on the primary connection', () => {
    const c = col('c', '  tags: [cluster]\n');
    expect(rejectReason(c, ctx())).toBeUndefined();
    expect(rejectReason(c, ctx({ forked: true }))).toMatch(/cluster/);
  });

  it('checks extension:, schema:, dbname:, username:, not: and CLI tags', () => {
    expect(rejectReason(col('c', '  tags: ["extension:plpgsql"]\n'), ctx())).toBeUndefined();
    expect(rejectReason(col('c', '  tags: ["extension:pg_stat_statements"]\n'), ctx())).toMatch(/extension/);
    expect(rejectReason(col('c', '  tags: ["schema:monitor"]\n'), ctx())).toBeUndefined();
    expect(rejectReason(col('c', '  tags: ["schema:nope"]\n'), ctx())).toMatch(/schema/);
    expect(rejectReason(col('c', '  tags: ["dbname:app"]\n'), ctx())).toBeUndefined();
    expect(rejectReason(col('c', '  tags: ["dbname:other"]\n'), ctx())).toMatch(/dbname/);
    expect(rejectReason(col('c', '  tags: ["username:mon"]\n'), ctx())).toBeUndefined();
    expect(rejectReason(col('c', '  tags: ["username:x"]\n'), ctx())).toMatch(/username/);
    expect(rejectReason(col('c', '  tags: ["not:slow"]\n'), ctx())).toBeUndefined();
    expect(rejectReason(col('c', '  tags: ["not:slow"]\n'), ctx({ cliTags: ['slow'] }))).toMatch(/tagged slow/);
    expect(rejectReason(col('c', '  tags: [slow]\n'), ctx())).toMatch(/not tagged/);
    expect(rejectReason(col('c', '  tags: [slow]\n'), ctx({ cliTags: ['slow'] }))).toBeUndefined();
  });

  it('separates pooler and PostgreSQL collectors, and honours skip', () => {
    const pgb = col('p', '  tags: [pgbouncer]\n');
    const plain = col('q', '');
    expect(planCollectors([pgb, plain], ctx({ pooler: true })).map((c) => c.branch)).toEqual(['p']);
    expect(planCollectors([pgb, plain], ctx()).map((c) => c.branch)).toEqual(['q']);
    expect(rejectReason(col('s', '  skip: true\n'), ctx())).toBe('skip');
  });
});
