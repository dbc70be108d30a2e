/**
 * ConfigApplier and pg_rewind (docs/ha.md "Rewind"): wal_log_hints is forced on with
 * use_db_rewind; a change of the rewind settings forgets a failed rewind.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { RewindRecord } from '../../../src/node/local/rewind-record.ts';
import { configApplierDeps } from '../fixtures.ts';

const timing = { ttl: 10, loop_wait: 2, retry_timeout: 3 };

function fakeDeps(database: Record<string, unknown>, localParameters: Record<string, string> = {}) {
  const rewinds = new RewindRecord({ notice: () => undefined });
  rewinds.started('n2', 2);
  rewinds.ended({ ok: false, from: 'n2', error: 'x', untouched: false });
  const deps = configApplierDeps({
    name: 'n1',
    state: { config: withDefaults({ ...timing, database }), localParameters, tags: {} },
    rewinds,
  });
  return { deps, rewinds };
}

/** A view holding `config`; as in a real DCS, each distinct stored value has its own mod revision. */
const revisions = new Map<string, string>();
const viewWith = (config: Record<string, unknown>): ClusterView => {
  const json = JSON.stringify(config);
  if (!revisions.has(json)) revisions.set(json, String(revisions.size + 5));
  return { members: [], config: { value: config, revision: revisions.get(json)! } };
};

describe('ConfigApplier with use_db_rewind', () => {
  it('forces wal_log_hints = on (pg_rewind needs it), even over a configured off', () => {
    const on = fakeDeps({ use_db_rewind: true, parameters: { wal_log_hints: 'off' } }, { wal_log_hints: 'off' });
    expect(new ConfigApplier(on.deps).configureOptions('primary').parameters['wal_log_hints']).toBe('on');
    const off = fakeDeps({ use_db_rewind: false, parameters: { wal_log_hints: 'off' } });
    expect(new ConfigApplier(off.deps).configureOptions('primary').parameters['wal_log_hints']).toBe('off');
  });

  it('a change of the rewind settings forgets a failed rewind; other changes keep it', () => {
    const { deps, rewinds } = fakeDeps({ use_db_rewind: true });
    const applier = new ConfigApplier(deps);
    applier.applyDynamic(viewWith({ ...timing, maximum_lag_on_failover: 5, database: { use_db_rewind: true } }));
    expect(rewinds.failure).toBeDefined();
    applier.applyDynamic(
      viewWith({
        ...timing,
        maximum_lag_on_failover: 5,
        database: { use_db_rewind: true, remove_data_directory_on_rewind_failure: false },
      }),
    );
    expect(rewinds.failure).toBeUndefined();
  });
});
