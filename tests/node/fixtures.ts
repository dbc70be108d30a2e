/**
 * Typed fixtures of the node's tests: complete values of the domain's types (a probe, a member)
 * built from the fields a test cares about, so no test needs a cast.
 */
import type { Member, MemberData } from '../../src/domain/member.ts';
import type { PgStatus } from '../../src/domain/pg-status.ts';

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
    data: { conn_url: `postgres://${name}:5432/postgres`, api_url: `http://${name}:8008/ha`, state: 'running', role: 'replica', version: '0.1.0', ...data },
  };
}
