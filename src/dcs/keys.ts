/**
 * Key names under the cluster prefix (shared/docs/dcs-layout.md, table "Key / Lease / Value").
 * Implementations keep their cache keyed by the *relative* key (`leader`, `members/pg-1`), and
 * turn it into the absolute etcd key with `absoluteKey`.
 */

/** Relative key names of the fixed keys. */
export const KEY = {
  initialize: 'initialize',
  config: 'config',
  leader: 'leader',
  status: 'status',
  failover: 'failover',
  sync: 'sync',
  history: 'history',
  failsafe: 'failsafe',
} as const;

/** Relative prefix of the member keys: `members/<name>`. */
export const MEMBERS_PREFIX = 'members/';

/** Relative key of one member: `members/<name>`. */
export function memberKey(name: string): string {
  return `${MEMBERS_PREFIX}${name}`;
}

/** Member name of a relative key `members/<name>`; undefined for any other key (or an empty name). */
export function memberNameOf(relativeKey: string): string | undefined {
  if (!relativeKey.startsWith(MEMBERS_PREFIX)) return undefined;
  const name = relativeKey.slice(MEMBERS_PREFIX.length);
  return name.length > 0 && !name.includes('/') ? name : undefined;
}

/** Absolute key: `prefix` (from clusterPrefix, ends in `/`) + relative key. */
export function absoluteKey(prefix: string, relativeKey: string): string {
  return prefix + relativeKey;
}

/** Relative key of an absolute key under `prefix`; undefined when the key is outside the prefix. */
export function relativeKey(prefix: string, key: string): string | undefined {
  return key.startsWith(prefix) ? key.slice(prefix.length) : undefined;
}
