/**
 * The project's default collector set (collectors/) as a contract: what it covers, that exactly
 * one branch of each metric prefix is installed on every PostgreSQL version from 12 to 18, that
 * every collector has a TTL and a timeout, and that database-level collectors carry datname.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/exporter/config-load.ts';
import { explainText } from '../../src/exporter/explain.ts';
import { planCollectors } from '../../src/exporter/planner.ts';
import type { ServerFacts } from '../../src/exporter/types.ts';

const cfg = loadConfig(resolve(import.meta.dirname, '../../collectors'));
const pgCollectors = cfg.collectors.filter((c) => !c.tags.includes('pgbouncer'));
const facts = (version: number, inRecovery: boolean): ServerFacts => ({
  version,
  inRecovery,
  dbname: 'postgres',
  username: 'postgres',
  databases: [],
  schemas: [],
  extensions: [],
});
const VERSIONS = [120000, 120022, 130000, 130018, 140000, 140015, 150000, 150010, 160000, 160006, 170000, 170002, 180000];

describe('the default collector set', () => {
  it('loads without warnings and covers what an operator expects', () => {
    expect(cfg.warnings).toEqual([]);
    const names = new Set(cfg.collectors.map((c) => c.name));
    for (const n of [
      'pg_instance',
      'pg_settings',
      'pg_replication',
      'pg_receiver',
      'pg_slot',
      'pg_walstat',
      'pg_archiving',
      'pg_ckpt',
      'pg_bgw',
      'pg_io',
      'pg_sessions',
      'pg_lockcount',
      'pg_wait_events',
      'pg_lock_waits',
      'pg_lock_blockers',
      'pg_statements',
      'pg_progress_vacuum',
      'pg_progress_analyze',
      'pg_progress_create_index',
      'pg_progress_cluster',
      'pg_progress_basebackup',
      'pg_progress_copy',
      'pg_database',
      'pg_tables',
      'pg_indexes',
      'pg_table_io',
      'pg_table_bloat',
      'pg_index_bloat',
      'pgbouncer_lists',
    ]) {
      expect(names.has(n), n).toBe(true);
    }
  });

  it.each(
    VERSIONS.flatMap(
      (v) =>
        [
          [v, false],
          [v, true],
        ] as const,
    ),
  )(
    'installs at most one branch per metric prefix on %d (recovery %s), and one of every multi-version prefix up to 17',
    (version, recovery) => {
      const planned = planCollectors(pgCollectors, { facts: facts(version, recovery), cliTags: [], pooler: false, forked: false });
      const byName = new Map<string, string[]>();
      for (const c of planned) byName.set(c.name, [...(byName.get(c.name) ?? []), c.branch]);
      for (const [name, branches] of byName) expect(branches, name).toHaveLength(1);
      if (version < 180000) {
        // prefixes with version branches cover every version from their first one on
        for (const name of ['pg_slot', 'pg_ckpt', 'pg_bgw', 'pg_database', 'pg_lock_waits', 'pg_statements'])
          expect(byName.has(name), `${name} on ${version}`).toBe(true);
        if (version >= 160000) expect(byName.has('pg_io')).toBe(true);
        expect(byName.get('pg_instance')).toEqual([recovery ? 'pg_instance_replica' : 'pg_instance_primary']);
      }
    },
  );

  it('gives every collector a TTL, a timeout and a version range from 12 on', () => {
    for (const c of pgCollectors) {
      expect(c.ttlSeconds, c.branch).toBeGreaterThan(0);
      expect(c.timeoutSeconds, c.branch).toBeGreaterThan(0);
      expect(c.minVersion, c.branch).toBeGreaterThanOrEqual(120000);
      if (c.maxVersion !== 0) expect(c.maxVersion).toBeGreaterThan(c.minVersion);
    }
  });

  it('labels every database-level collector (not cluster-tagged) with datname, so discovered databases do not collide', () => {
    const perDb = pgCollectors.filter((c) => !c.tags.includes('cluster'));
    expect(perDb.map((c) => c.name).sort()).toEqual(['pg_index_bloat', 'pg_indexes', 'pg_table_bloat', 'pg_table_io', 'pg_tables']);
    for (const c of perDb)
      expect(
        c.columns.some((col) => col.usage === 'LABEL' && (col.rename ?? col.name) === 'datname'),
        c.branch,
      ).toBe(true);
  });

  it('gates pg_statements with a predicate (extension visible and library loaded), shown by /explain', () => {
    const branches = cfg.collectors.filter((c) => c.name === 'pg_statements');
    expect(branches.map((c) => c.branch).sort()).toEqual(['pg_statements_12', 'pg_statements_13', 'pg_statements_14', 'pg_statements_17']);
    for (const c of branches) {
      expect(c.predicates).toHaveLength(1);
      expect(c.predicates[0]!.query).toMatch(/to_regclass\('pg_stat_statements'\)/);
      expect(c.predicates[0]!.query).toMatch(/shared_preload_libraries/);
      expect(c.predicates[0]!.ttlSeconds).toBe(60);
      expect(c.query).toMatch(/LIMIT 25\s*$/);
    }
    const text = explainText(branches.filter((c) => c.branch === 'pg_statements_14'));
    expect(text).toContain('#       TTL        10\n');
    expect(text).toContain('#       Version    140000 ~ 170000\n');
    expect(text).toContain('    predicate_queries:\n        - name: pg_stat_statements readable\n');
  });
});
