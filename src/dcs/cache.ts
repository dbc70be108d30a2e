/**
 * The cache of the whole prefix, shared by both implementations: a map of relative key ->
 * StoredKv at a known store revision, fed by a full read (`replace`) and by watch events
 * (`apply`). Each change yields the DcsEvents the node reacts to. Ordering rule that must stay
 * true: the cache only moves forward in revisions, so a slow range read that returns after newer
 * watch events is ignored, and watch events already covered by a range read are skipped.
 */
import type { ClusterView } from '../domain/cluster.ts';
import { decodeLeader } from './codec.ts';
import type { DcsEvent } from './dcs.ts';
import { KEY, memberNameOf } from './keys.ts';
import { buildClusterView, type StoredKv } from './view.ts';

/** One watch event on a relative key. `revision`: mod_revision of the put, revision of the delete. */
export type KvChange = { type: 'put'; key: string; kv: StoredKv } | { type: 'delete'; key: string; revision: string };

/** The DcsEvents caused by one key going from `before` to `after` (undefined = absent). */
export function eventsForChange(key: string, before: StoredKv | undefined, after: StoredKv | undefined): DcsEvent[] {
  if (before?.modRevision === after?.modRevision && before?.value === after?.value) return [];
  const member = memberNameOf(key);
  if (member !== undefined) return [{ type: 'dcs.memberChanged', name: member }];
  switch (key) {
    case KEY.leader: {
      const was = before ? decodeLeader(before.value) : undefined;
      const now = after ? decodeLeader(after.value) : undefined;
      return was === now ? [] : [{ type: 'dcs.leaderChanged', leader: now }];
    }
    case KEY.config:
      return [{ type: 'dcs.configChanged' }];
    case KEY.failover:
      return [{ type: 'dcs.failoverChanged' }];
    case KEY.status:
      return [{ type: 'dcs.statusChanged' }];
    case KEY.sync:
      return [{ type: 'dcs.syncChanged' }];
    case KEY.history:
      return [{ type: 'dcs.historyChanged' }];
    case KEY.initialize:
      return [{ type: 'dcs.initializeChanged' }];
    default:
      return [];
  }
}

/** Cache of the prefix at one store revision. */
export class ViewCache {
  private keys = new Map<string, StoredKv>();
  private rev = 0n;
  private built: ClusterView | undefined;

  /** Store revision the cache reflects (0 before the first read). */
  revision(): bigint {
    return this.rev;
  }

  /** Parsed view, rebuilt only after a change. */
  view(): ClusterView {
    this.built ??= buildClusterView(this.keys);
    return this.built;
  }

  /** Raw stored value of a relative key (tests and adapters). */
  get(key: string): StoredKv | undefined {
    return this.keys.get(key);
  }

  /**
   * Replaces the content with a full read taken at store revision `revision`. Ignored (returns
   * []) when the cache is already at a newer revision. Returns the events of the differences.
   */
  replace(entries: ReadonlyMap<string, StoredKv>, revision: bigint): DcsEvent[] {
    if (revision < this.rev) return [];
    const events: DcsEvent[] = [];
    for (const [key, before] of this.keys) {
      if (!entries.has(key)) events.push(...eventsForChange(key, before, undefined));
    }
    for (const [key, after] of entries) events.push(...eventsForChange(key, this.keys.get(key), after));
    this.keys = new Map(entries);
    this.rev = revision;
    this.built = undefined;
    return events;
  }

  /**
   * Applies watch events in order, skipping those below the cache revision. Events *at* the
   * cache revision are applied again: one transaction (a prefix delete, a multi-key txn) yields
   * several events with the same revision, and re-applying an event a full read already covered
   * is a no-op (same value and mod_revision, or an absent key deleted again).
   */
  apply(changes: readonly KvChange[]): DcsEvent[] {
    const events: DcsEvent[] = [];
    for (const change of changes) {
      const rev = BigInt(change.type === 'put' ? change.kv.modRevision : change.revision);
      if (rev < this.rev) continue;
      const before = this.keys.get(change.key);
      if (change.type === 'put') {
        this.keys.set(change.key, change.kv);
        events.push(...eventsForChange(change.key, before, change.kv));
      } else {
        this.keys.delete(change.key);
        if (before) events.push(...eventsForChange(change.key, before, undefined));
      }
      this.rev = rev;
      this.built = undefined;
    }
    return events;
  }
}
