import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { configApplierDeps } from '../fixtures.ts';

/** ConfigApplier's deps recording the DCS client calls; `republish` counts the member key's re-publications. */
function fakeDeps(bootstrap: { ttl: number; loop_wait: number; retry_timeout: number }) {
  const calls: string[] = [];
  let failTtl = false;
  let republished = 0;
  const state = { config: withDefaults(bootstrap), tags: {}, localParameters: {} };
  const deps = configApplierDeps({
    dcs: {
      setRetryTimeout: (ms: number) => void calls.push(`retry ${ms}`),
      setTtl: async (s: number) => {
        calls.push(`ttl ${s}`);
        if (failTtl) throw new Error('etcd down');
      },
    },
    state,
    republish: async () => void republished++,
  });
  return { deps, calls, state, republished: () => republished, setFailTtl: (v: boolean) => (failTtl = v) };
}

/** A view holding `config`; as in a real DCS, each distinct stored value has its own mod revision. */
const revisions = new Map<string, string>();
const viewWith = (config: Record<string, unknown>): ClusterView => {
  const json = JSON.stringify(config);
  if (!revisions.has(json)) revisions.set(json, String(revisions.size + 5));
  return { members: [], config: { value: config, revision: revisions.get(json)! } };
};
const flush = () => new Promise((r) => setTimeout(r, 0));

describe('ConfigApplier: ttl and retry_timeout reach the DCS client', () => {
  it('a ttl stored before this agent started (taken as the current config at start) still re-grants the lease', async () => {
    const { deps, calls, state, republished } = fakeDeps({ ttl: 10, loop_wait: 2, retry_timeout: 3 });
    const applier = new ConfigApplier(deps);
    // HaNode.start() takes the stored config as the current one before the first cycle.
    const stored = { ttl: 20, loop_wait: 2, retry_timeout: 4 };
    state.config = withDefaults(stored);
    applier.applyDynamic(viewWith(stored));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 20']);
    expect(republished()).toBe(1);
    // the same config again: nothing more
    applier.applyDynamic(viewWith(stored));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 20']);
  });

  it('a retry_timeout change made later reaches the client; a failed re-grant is tried again next cycle', async () => {
    const { deps, calls, setFailTtl } = fakeDeps({ ttl: 10, loop_wait: 2, retry_timeout: 3 });
    const applier = new ConfigApplier(deps);
    applier.applyDynamic(viewWith({ ttl: 10, loop_wait: 2, retry_timeout: 3 }));
    await flush();
    expect(calls).toEqual([]);
    applier.applyDynamic(viewWith({ ttl: 10, loop_wait: 1, retry_timeout: 4 }));
    expect(calls).toEqual(['retry 4000']);
    setFailTtl(true);
    applier.applyDynamic(viewWith({ ttl: 12, loop_wait: 1, retry_timeout: 4 }));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 12']);
    setFailTtl(false);
    applier.applyDynamic(viewWith({ ttl: 12, loop_wait: 1, retry_timeout: 4 }));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 12', 'ttl 12']);
    applier.applyDynamic(viewWith({ ttl: 12, loop_wait: 1, retry_timeout: 4 }));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 12', 'ttl 12']);
  });
});
