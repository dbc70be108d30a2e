/**
 * ConfigApplier and quorum failover (docs/ha.md "Quorum failover"): with the mode on, a replica's
 * WAL receiver times out after the window (a partition closes no connection, so without it the
 * receiver would report streaming for wal_receiver_timeout's 60 s default); an operator's own
 * wal_receiver_timeout is kept; a primary, a standby cluster and a cluster without the mode get
 * nothing.
 */
import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { configApplierDeps } from '../fixtures.ts';

const quorum = {
  ttl: 30,
  loop_wait: 10,
  retry_timeout: 10,
  synchronous_mode: 'quorum',
  synchronous_mode_strict: true,
  quorum_failover_window: 2,
};

function applier(config: Record<string, unknown>, localParameters: Record<string, string> = {}): ConfigApplier {
  return new ConfigApplier(configApplierDeps({ name: 'n1', state: { config: withDefaults(config), localParameters, tags: {} } }));
}

describe('ConfigApplier with quorum_failover_window', () => {
  it('a replica gets wal_receiver_timeout = the window, in ms', () => {
    expect(applier(quorum).configureOptions('replica').parameters['wal_receiver_timeout']).toBe(2000);
    expect(applier({ ...quorum, quorum_failover_window: 1.5 }).configureOptions('replica').parameters['wal_receiver_timeout']).toBe(1500);
  });

  it('a primary, a window of 0, a cluster where the mode cannot be on and a standby cluster get none', () => {
    expect(applier(quorum).configureOptions('primary').parameters['wal_receiver_timeout']).toBeUndefined();
    expect(
      applier({ ...quorum, quorum_failover_window: 0 }).configureOptions('replica').parameters['wal_receiver_timeout'],
    ).toBeUndefined();
    expect(
      applier({ ...quorum, synchronous_mode_strict: false }).configureOptions('replica').parameters['wal_receiver_timeout'],
    ).toBeUndefined();
    const standby = applier({ ...quorum, standby_cluster: { host: '10.0.0.9', port: 5432 } });
    expect(standby.configureOptions('replica').parameters['wal_receiver_timeout']).toBeUndefined();
  });

  it("the operator's wal_receiver_timeout wins, dynamic or local, whatever its case", () => {
    const dyn = applier({ ...quorum, postgresql: undefined, database: { parameters: { wal_receiver_timeout: '30s' } } });
    expect(dyn.configureOptions('replica').parameters['wal_receiver_timeout']).toBe('30s');
    const local = applier(quorum, { WAL_RECEIVER_TIMEOUT: '10s' });
    const p = local.configureOptions('replica').parameters;
    expect(p['WAL_RECEIVER_TIMEOUT']).toBe('10s');
    expect(p['wal_receiver_timeout']).toBeUndefined();
  });
});
