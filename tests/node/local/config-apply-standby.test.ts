/**
 * ConfigApplier for the standby leader (docs/ha.md "Standby cluster", docs/backups.md "A standby
 * cluster fed by the archive"): primary_conninfo and its slot point at the remote host:port when
 * there is one; without a host the standby leader is fed by standby_cluster.restore_command alone.
 */
import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { standbyClusterOf } from '../../../src/domain/standby-cluster.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { ReplicationSource } from '../../../src/node/replication/replication-source.ts';
import { configApplierDeps } from '../fixtures.ts';

/** The options the standby leader is configured with under `standby_cluster` = `sc`. */
function standbyLeaderOptions(sc: Record<string, unknown>) {
  const config = withDefaults({ standby_cluster: sc, database: { use_slots: true } });
  const source = new ReplicationSource();
  source.pointAtRemote(standbyClusterOf(config)!);
  const applier = new ConfigApplier(
    configApplierDeps({ state: { config, tags: {}, localParameters: {}, recoveryConf: { restore_command: 'member own' } }, source }),
  );
  return applier.configureOptions('replica');
}

describe('ConfigApplier: the standby leader', () => {
  it("streams from host:port with the remote slot and the standby_cluster recovery settings (not the member's recovery_conf)", () => {
    const o = standbyLeaderOptions({ host: '10.0.0.9', port: 5433, primary_slot_name: 'dr', restore_command: 'fetch %f %p' });
    expect(o.upstream).toEqual({ host: '10.0.0.9', port: 5433, name: 'standby_cluster' });
    expect(o.slotName).toBe('dr');
    expect(o.parameters['restore_command']).toBe('fetch %f %p');
  });

  it('without host: no primary_conninfo, no slot; restore_command alone feeds it', () => {
    const o = standbyLeaderOptions({ restore_command: 'fetch %f %p', primary_slot_name: 'dr', recovery_min_apply_delay: '5min' });
    expect(o.upstream).toBeUndefined();
    expect(o.slotName).toBeUndefined();
    expect(o.parameters['restore_command']).toBe('fetch %f %p');
    expect(o.parameters['recovery_min_apply_delay']).toBe('5min');
  });
});
