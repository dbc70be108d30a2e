import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import type { NodeCore } from '../../../src/node/node-core.ts';

/** A NodeCore with just what ConfigApplier's timing needs, recording the DCS client calls. */
function fakeCore(bootstrap: { ttl: number; loop_wait: number; retry_timeout: number }) {
  const calls: string[] = [];
  let failTtl = false;
  const dcs = {
    setRetryTimeout: (ms: number) => calls.push(`retry ${ms}`),
    setTtl: async (s: number) => {
      calls.push(`ttl ${s}`);
      if (failTtl) throw new Error('etcd down');
    },
  };
  const state = { config: withDefaults(bootstrap), rewindFailure: undefined };
  const core = {
    deps: { dcs, log: { warn: () => undefined } },
    state,
    notice: () => undefined,
    schedules: () => undefined,
    db: () => ({ getSnapshot: () => ({ value: 'stopped', context: { role: 'replica' } }) }),
    wake: () => undefined,
  } as unknown as NodeCore;
  return { core, calls, state, setFailTtl: (v: boolean) => (failTtl = v) };
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
    const { core, calls, state } = fakeCore({ ttl: 10, loop_wait: 2, retry_timeout: 3 });
    let republished = 0;
    const applier = new ConfigApplier(core, async () => void republished++);
    // HaNode.start() takes the stored config as the current one before the first cycle.
    const stored = { ttl: 20, loop_wait: 2, retry_timeout: 4 };
    state.config = withDefaults(stored);
    applier.applyDynamic(viewWith(stored));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 20']);
    expect(republished).toBe(1);
    // the same config again: nothing more
    applier.applyDynamic(viewWith(stored));
    await flush();
    expect(calls).toEqual(['retry 4000', 'ttl 20']);
  });

  it('a retry_timeout change made later reaches the client; a failed re-grant is tried again next cycle', async () => {
    const { core, calls, setFailTtl } = fakeCore({ ttl: 10, loop_wait: 2, retry_timeout: 3 });
    const applier = new ConfigApplier(core, async () => undefined);
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
