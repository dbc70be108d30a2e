/** hactl demote-cluster / promote-cluster on the in-process DCS with a scripted terminal (patroni.md §5). */
import { afterEach, describe, expect, it } from 'vitest';
import { runDemoteCluster, runPromoteCluster } from '../../src/ctl/cluster-mode.ts';
import type { InMemoryStore } from '../../src/dcs/memory.ts';
import { memorySession } from './fixtures.ts';

const stores: InMemoryStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

async function cluster(answers: Array<string | undefined> = [], config: Record<string, unknown> = {}) {
  const m = await memorySession(answers);
  stores.push(m.store);
  await m.other.setConfig({ ttl: 30, loop_wait: 10, retry_timeout: 10, ...config });
  return m;
}

const stored = async (m: Awaited<ReturnType<typeof cluster>>) => (await m.session.dcs.refresh()).config?.value;

describe('demote-cluster', () => {
  it('writes standby_cluster after a yes', async () => {
    const m = await cluster(['y']);
    await runDemoteCluster(m.session, { host: '10.0.0.9', port: '5433', primarySlotName: 'dr', force: false, wait: false });
    expect(m.io.questions).toEqual(['Demote cluster demo: its leader becomes a standby leader replicating from 10.0.0.9:5433? [y/N]: ']);
    expect(m.io.lines).toEqual(['Success: cluster demo is a standby cluster of 10.0.0.9:5433']);
    expect((await stored(m))?.['standby_cluster']).toEqual({ host: '10.0.0.9', port: 5433, primary_slot_name: 'dr' });
    expect((await stored(m))?.['ttl']).toBe(30);
  });

  it('takes --restore-command without --host: a standby cluster fed by the archive', async () => {
    const m = await cluster();
    await runDemoteCluster(m.session, { restoreCommand: 'fetch %f %p', force: true, wait: false });
    expect(m.io.lines).toEqual(['Success: cluster demo is a standby cluster of its WAL archive (restore_command)']);
    expect((await stored(m))?.['standby_cluster']).toEqual({ restore_command: 'fetch %f %p' });
  });

  it('refuses: neither host nor restore command, a bad port, a bad slot name, already a standby cluster, a no', async () => {
    const m = await cluster(['n']);
    await expect(runDemoteCluster(m.session, { force: true, wait: false })).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/needs --host .* --restore-command/),
    });
    await expect(runDemoteCluster(m.session, { host: 'h', port: 'x', force: true, wait: false })).rejects.toThrow(/invalid --port/);
    await expect(runDemoteCluster(m.session, { host: 'h', primarySlotName: 'Bad-Slot', force: true, wait: false })).rejects.toThrow(
      /standby_cluster\.primary_slot_name/,
    );
    await expect(runDemoteCluster(m.session, { host: 'h', force: false, wait: false })).rejects.toThrow('Aborted: cluster not demoted');
    expect((await stored(m))?.['standby_cluster']).toBeUndefined();
    const s = await cluster([], { standby_cluster: { host: 'h' } });
    await expect(runDemoteCluster(s.session, { host: 'h2', force: true, wait: false })).rejects.toThrow(
      'Cluster is already in standby mode',
    );
  });
});

describe('promote-cluster', () => {
  it('removes standby_cluster, keeping the rest', async () => {
    const m = await cluster([], { standby_cluster: { host: 'h', port: 5433 }, maximum_lag_on_failover: 5 });
    await runPromoteCluster(m.session, { force: true, wait: false });
    expect(m.io.lines).toEqual(['Success: cluster demo is being promoted']);
    expect(await stored(m)).toEqual({ ttl: 30, loop_wait: 10, retry_timeout: 10, maximum_lag_on_failover: 5 });
  });

  it('refuses on a cluster that is not a standby cluster, and on a no', async () => {
    const m = await cluster();
    await expect(runPromoteCluster(m.session, { force: true, wait: false })).rejects.toThrow('Cluster is not in standby mode');
    const s = await cluster(['n'], { standby_cluster: { host: 'h' } });
    await expect(runPromoteCluster(s.session, { force: false, wait: false })).rejects.toThrow('Aborted: cluster not promoted');
    expect((await stored(s))?.['standby_cluster']).toEqual({ host: 'h' });
  });
});
