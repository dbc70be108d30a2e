/**
 * The dynamic configuration in the DCS with keys the agent does not read (issue 32: written by
 * an older version, another tool, or the reference's agents) keeps working: the keys are
 * reported once (log + journal notice), not obeyed, and the rest is applied; a document in the
 * reference's dialect is read in its own names (issue 26).
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../src/domain/cluster.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { configApplierDeps } from '../fixtures.ts';

function fakeCore() {
  const notices: Array<[string, string]> = [];
  const state = { config: withDefaults({ ttl: 30, loop_wait: 10, retry_timeout: 10 }), tags: {}, localParameters: {} };
  const core = configApplierDeps({
    state,
    notice: (type: string, text: string) => notices.push([type, text]),
    schedules: () => ({ setLoopWait: () => undefined }),
  });
  return { core, notices, state };
}

let revision = 100;
const viewWith = (config: Record<string, unknown>): ClusterView => ({
  members: [],
  config: { value: config, revision: String(revision++) },
});

describe('ConfigApplier: stored keys the agent does not read', () => {
  it('are reported once, not obeyed, and the settings it reads are applied', () => {
    const { core, notices, state } = fakeCore();
    const applier = new ConfigApplier(core);
    const stored = {
      ttl: 30,
      loop_wait: 5,
      retry_timeout: 10,
      loop_wiat: 1,
      master_start_timeout: 0,
      database: { pg_ident: ['m a b'], parameters: { work_mem: '8MB' } },
    };
    applier.applyDynamic(viewWith(stored));
    expect(notices).toEqual([
      [
        'config.adjusted',
        'dynamic configuration in the DCS adjusted: ignored loop_wiat: unknown key; did you mean loop_wait?; ' +
          'ignored master_start_timeout: not supported: a primary that fails to start releases the leader key at once (as primary_start_timeout 0); ' +
          'ignored database.pg_ident: not supported: the agent writes no pg_ident.conf',
      ],
    ]);
    expect(state.config.loop_wait).toBe(5);
    expect(state.config.database.parameters).toEqual({ work_mem: '8MB' });
    // Later revisions carrying the same keys (another setting changed): not reported again.
    applier.applyDynamic(viewWith({ ...stored, loop_wait: 6 }));
    applier.applyDynamic(viewWith({ ...stored, loop_wait: 6 }));
    expect(notices).toHaveLength(1);
    expect(state.config.loop_wait).toBe(6);
    // Removed by an operator: said again only when something new is ignored.
    applier.applyDynamic(viewWith({ ttl: 30, loop_wait: 6, retry_timeout: 10 }));
    applier.applyDynamic(viewWith({ ttl: 30, loop_wait: 6, retry_timeout: 10, candidate: ['x'] }));
    expect(notices.at(-1)).toEqual(['config.adjusted', 'dynamic configuration in the DCS adjusted: ignored candidate: unknown key']);
  });

  it("reads a document of the reference's dialect, with the reference's defaults", () => {
    const { core, notices, state } = fakeCore();
    const applier = new ConfigApplier(core);
    applier.applyDynamic(
      viewWith({ ttl: 30, loop_wait: 10, retry_timeout: 10, postgresql: { use_slots: false, parameters: { max_connections: 150 } } }),
    );
    expect(notices).toEqual([]);
    expect(state.config.database).toEqual({
      use_slots: false,
      use_db_rewind: false,
      remove_data_directory_on_rewind_failure: false,
      remove_data_directory_on_diverged_timelines: false,
      parameters: { max_connections: 150 },
    });
    applier.applyDynamic(viewWith({ ttl: 30, loop_wait: 10, retry_timeout: 10, postgresql: { use_pg_rewind: true, use_slots: 'no' } }));
    expect(notices).toEqual([
      [
        'config.rejected',
        'dynamic configuration in the DCS is invalid, keeping the last good one: postgresql.use_slots: must be true or false, got "no"',
      ],
    ]);
    expect(state.config.database.use_slots).toBe(false);
  });
});
