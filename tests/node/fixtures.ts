/**
 * Typed fixtures of the node's tests: complete values of the domain's types (a probe, a member)
 * and of the modules' deps, built from the fields a test cares about, so no test needs a cast.
 */
import { HandoverRefusals } from '../../src/node/cycle/handover-refusal.ts';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import type { Member, MemberData } from '../../src/domain/member.ts';
import type { PgStatus } from '../../src/domain/pg-status.ts';
import type { Role } from '../../src/domain/states.ts';
import { NodeState, type DatabaseView } from '../../src/node/node-core.ts';
import type { ExecutorDeps } from '../../src/node/cycle/executor.ts';
import type { ConfigApplierDeps } from '../../src/node/local/config-apply.ts';
import { RewindRecord } from '../../src/node/local/rewind-record.ts';
import { ReplicationSource } from '../../src/node/replication/replication-source.ts';

/** A probe of a running PostgreSQL 15 primary at timeline 1, with `fields` over it. */
export function pgStatus(fields: Partial<PgStatus> = {}): PgStatus {
  return {
    atMs: 0,
    inRecovery: false,
    serverVersion: 150000,
    postmasterStartTime: '2026-01-01 00:00:00+00',
    timeline: 1,
    streaming: false,
    replication: [],
    pendingRestart: {},
    slots: {},
    ...fields,
  };
}

/** A member key: `name` running as a replica, with `data` over it. */
export function member(name: string, data: Partial<MemberData> = {}): Member {
  return {
    name,
    data: {
      conn_url: `postgres://${name}:5432/postgres`,
      api_url: `http://${name}:8008/ha`,
      state: 'running',
      role: 'replica',
      version: '0.1.0',
      ...data,
    },
  };
}

/** A database machine in state `value` with `role` (not promoting), as the node's modules read it. */
export function databaseAt(value: string, role: Role): DatabaseView {
  const snapshot = { value, context: { role, promoting: false } };
  return { getSnapshot: () => snapshot };
}

/** ConfigApplier's deps: a stopped replica, no-op DCS client and PostgreSQL, nothing recorded; `over` replaces any of them. */
export function configApplierDeps(over: Partial<ConfigApplierDeps> = {}): ConfigApplierDeps {
  return {
    name: 'node1',
    dcs: { setRetryTimeout: () => undefined, setTtl: async () => undefined },
    pg: { configure: async () => undefined, reload: async () => undefined },
    log: { warn: () => undefined },
    state: { config: withDefaults({}), tags: {}, localParameters: {} },
    notice: () => undefined,
    wake: () => undefined,
    schedules: () => undefined,
    sync: { parameterValue: () => undefined },
    source: new ReplicationSource(),
    rewinds: new RewindRecord({ notice: () => undefined }),
    db: () => databaseAt('stopped', 'replica'),
    republish: async () => undefined,
    ...over,
  };
}

/** A call a test did not expect: rejects (or throws) naming it. */
function unexpected(what: string): () => Promise<never> {
  return () => Promise.reject(new Error(`${what} was not expected in this test`));
}

/** Executor's deps: every DCS, PostgreSQL and lock call unexpected (rejects), a stopped replica; `over` replaces any of them. */
export function executorDeps(over: Partial<ExecutorDeps> = {}): ExecutorDeps {
  return {
    name: 'node1',
    bootstrapDcs: {},
    dcs: {
      initialize: unexpected('dcs.initialize'),
      cancelInitialize: unexpected('dcs.cancelInitialize'),
      setConfig: unexpected('dcs.setConfig'),
      setHistory: unexpected('dcs.setHistory'),
      setFailover: unexpected('dcs.setFailover'),
      clearLeader: unexpected('dcs.clearLeader'),
      setSync: unexpected('dcs.setSync'),
      refresh: unexpected('dcs.refresh'),
    },
    pg: { controlData: unexpected('pg.controlData'), query: unexpected('pg.query'), syncSlots: unexpected('pg.syncSlots') },
    log: { info: () => undefined, warn: () => undefined },
    state: new NodeState({ config: withDefaults({}), tags: {}, localParameters: {} }),
    lock: { acquire: unexpected('lock.acquire'), release: unexpected('lock.release'), take: unexpected('lock.take') },
    fencing: { beforeAcquire: unexpected('fencing.beforeAcquire'), afterAcquire: unexpected('fencing.afterAcquire') },
    duties: { historyWritten: () => undefined, run: unexpected('duties.run') },
    sync: { keyBeforePromotion: () => undefined, promoting: () => undefined, run: unexpected('sync.run') },
    source: new ReplicationSource(),
    rewinds: new RewindRecord({ notice: () => undefined }),
    trackers: { noteSystemIdentifier: () => undefined },
    release: { request: () => undefined },
    config: { writeAndReload: unexpected('config.writeAndReload') },
    replicaSlots: { run: unexpected('replicaSlots.run') },
    refusals: new HandoverRefusals(),
    db: () => ({ ...databaseAt('stopped', 'replica'), send: () => undefined }),
    probe: () => undefined,
    now: () => 0,
    notice: () => undefined,
    emitChange: () => undefined,
    ...over,
  };
}
