/**
 * ConfigApplier and pg_rewind (docs/ha.md "Rewind"): wal_log_hints is forced on with
 * use_db_rewind; a change of the rewind settings forgets a failed rewind.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import type { NodeCore } from '../../../src/node/node-core.ts';

const timing = { ttl: 10, loop_wait: 2, retry_timeout: 3 };

function fakeCore(database: Record<string, unknown>, localParameters: Record<string, string> = {}) {
  const state = {
    config: withDefaults({ ...timing, database }),
    localParameters,
    upstream: undefined,
    rewindFailure: { leader: 'n2', timeline: 2, reason: 'x' } as unknown,
  };
  const core = {
    deps: { name: 'n1', dcs: { setRetryTimeout: () => undefined, setTtl: async () => undefined }, log: { warn: () => undefined } },
    state,
    sync: { parameterValue: () => undefined },
    notice: () => undefined,
    schedules: () => undefined,
    db: () => ({ getSnapshot: () => ({ value: 'stopped', context: { role: 'replica' } }) }),
    wake: () => undefined,
  } as unknown as NodeCore;
  return { core, state };
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
    const on = fakeCore({ use_db_rewind: true, parameters: { wal_log_hints: 'off' } }, { wal_log_hints: 'off' });
    expect(new ConfigApplier(on.core, async () => undefined).configureOptions('primary').parameters['wal_log_hints']).toBe('on');
    const off = fakeCore({ use_db_rewind: false, parameters: { wal_log_hints: 'off' } });
    expect(new ConfigApplier(off.core, async () => undefined).configureOptions('primary').parameters['wal_log_hints']).toBe('off');
  });

  it('a change of the rewind settings forgets a failed rewind; other changes keep it', () => {
    const { core, state } = fakeCore({ use_db_rewind: true });
    const applier = new ConfigApplier(core, async () => undefined);
    applier.applyDynamic(viewWith({ ...timing, maximum_lag_on_failover: 5, database: { use_db_rewind: true } }));
    expect(state.rewindFailure).toBeDefined();
    applier.applyDynamic(viewWith({ ...timing, maximum_lag_on_failover: 5, database: { use_db_rewind: true, remove_data_directory_on_rewind_failure: false } }));
    expect(state.rewindFailure).toBeUndefined();
  });
});
