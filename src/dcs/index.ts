/**
 * The DCS layer: the Dcs contract (dcs.ts), its two implementations and a factory.
 * `createDcs({ kind: 'etcd3', hosts, ...DcsOptions })` for production,
 * `createDcs({ kind: 'memory', store, ...DcsOptions })` for embedding, the demo and tests.
 */
import type { Dcs, DcsOptions } from './dcs.ts';
import { EtcdDcs } from './etcd.ts';
import { InMemoryDcs, type InMemoryStore } from './memory.ts';

export * from './dcs.ts';
export { EtcdDcs, type EtcdDcsOptions } from './etcd.ts';
import type { EtcdSecurity } from './etcd-client.ts';
export { InMemoryDcs, InMemoryStore, type InMemoryDcsOptions, type InMemoryStoreOptions } from './memory.ts';
export { buildClusterView, type StoredKv, type RawKeys } from './view.ts';
export { isEmptyFailover } from './codec.ts';

/** Which store a Dcs talks to: etcd v3 endpoints (`host:port`), or a shared in-process store. */
export type DcsBackend = { kind: 'etcd3'; hosts: string[]; security?: EtcdSecurity } | { kind: 'memory'; store: InMemoryStore };

/** Backend plus the options shared by both implementations. */
export type DcsConfig = DcsBackend & DcsOptions;

/**
 * Creates (does not start) a Dcs for `config`. Throws RangeError for an etcd backend without
 * hosts. Call `start()` next.
 */
export function createDcs(config: DcsConfig): Dcs {
  if (config.kind === 'etcd3') {
    if (config.hosts.length === 0) throw new RangeError('etcd3 DCS needs at least one host');
    return new EtcdDcs(config);
  }
  return new InMemoryDcs(config);
}
