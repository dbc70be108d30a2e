/**
 * Builds a ClusterView from the raw cache of the prefix, shared by both implementations.
 * Values that do not parse are left out (codec.ts); keys outside the layout are ignored. A
 * `failover` value that is not a valid request is not `failover` but `failoverInvalid` (with the
 * reason and the revision, so the leader can clear it by compare-and-set): nothing executes it.
 */
import type { ClusterView, LeaderLock } from '../domain/cluster.ts';
import type { Member } from '../domain/member.ts';
import {
  decodeConfig,
  decodeFailsafe,
  decodeHistory,
  decodeInitialize,
  decodeLeader,
  decodeMember,
  decodeStatus,
  decodeSync,
  parseFailover,
} from './codec.ts';
import { KEY, memberNameOf } from './keys.ts';

/** One stored key as the cache holds it. Revisions and lease ids are int64 decimal strings. */
export interface StoredKv {
  /** UTF-8 value. */
  value: string;
  /** mod_revision of the key. */
  modRevision: string;
  /** create_revision of the key. */
  createRevision: string;
  /** Lease id attached to the key; '0' when none. */
  lease: string;
}

/** Relative key (`leader`, `members/pg-1`, …) -> stored value. */
export type RawKeys = ReadonlyMap<string, StoredKv>;

/** Parses every known key of `raw` into a ClusterView; members sorted by name. Never throws. */
export function buildClusterView(raw: RawKeys): ClusterView {
  const view: ClusterView = { members: [] };
  const members: Member[] = [];
  for (const [key, kv] of raw) {
    const memberName = memberNameOf(key);
    if (memberName !== undefined) {
      const data = decodeMember(kv.value);
      if (data) members.push({ name: memberName, data });
      continue;
    }
    switch (key) {
      case KEY.initialize: {
        const sysid = decodeInitialize(kv.value);
        if (sysid !== undefined) view.initialize = sysid;
        break;
      }
      case KEY.config: {
        const value = decodeConfig(kv.value);
        if (value) view.config = { value, revision: kv.modRevision };
        break;
      }
      case KEY.leader: {
        const name = decodeLeader(kv.value);
        if (name !== undefined) view.leader = leaderLock(name, kv);
        break;
      }
      case KEY.status: {
        const status = decodeStatus(kv.value);
        if (status) view.status = status;
        break;
      }
      case KEY.failover: {
        const parsed = parseFailover(kv.value);
        if (parsed.ok) view.failover = { value: parsed.value, revision: kv.modRevision };
        else view.failoverInvalid = { reason: parsed.reason, revision: kv.modRevision };
        break;
      }
      case KEY.sync: {
        const value = decodeSync(kv.value);
        if (value) view.sync = { value, revision: kv.modRevision };
        break;
      }
      case KEY.history: {
        const history = decodeHistory(kv.value);
        if (history) view.history = history;
        break;
      }
      case KEY.failsafe: {
        const value = decodeFailsafe(kv.value);
        if (value) view.failsafe = value;
        break;
      }
      default:
        break;
    }
  }
  members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  view.members = members;
  return view;
}

function leaderLock(name: string, kv: StoredKv): LeaderLock {
  return { name, leaseId: kv.lease === '0' ? '' : kv.lease, revision: kv.modRevision, createRevision: kv.createRevision };
}
