import { describe, expect, it } from 'vitest';
import { isHealthiest, peerFromStatus, publishedPositions, type RaceInput } from '../../src/domain/leader-race.ts';
import { checkDivergence, historyEntries, parseHistoryFile } from '../../src/domain/timeline-history.ts';

const base = (over: Partial<RaceInput> = {}): RaceInput => ({
  self: { name: 'a', walBytes: 100n, timeline: 2, tags: {} },
  peers: [],
  leaderOptimeBytes: 0n,
  maxLagBytes: 1048576,
  checkTimeline: false,
  clusterTimeline: 2,
  ...over,
});

describe('isHealthiest', () => {
  it.each([
    ['alone', base(), true],
    ['nofailover', base({ self: { name: 'a', walBytes: 100n, timeline: 2, tags: { nofailover: true } } }), false],
    ['failover_priority 0', base({ self: { name: 'a', walBytes: 100n, timeline: 2, tags: { failover_priority: 0 } } }), false],
    ['peer ahead', base({ peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 101n }] }), false],
    ['peer behind', base({ peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 99n }] }), true],
    [
      'equal position, higher priority peer',
      base({ peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 100n, tags: { failover_priority: 2 } }] }),
      false,
    ],
    ['equal position, equal priority', base({ peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 100n }] }), true],
    ['primary still running', base({ peers: [{ name: 'b', reachable: true, role: 'primary', state: 'running', walBytes: 1n }] }), false],
    ['former primary stopped', base({ peers: [{ name: 'b', reachable: true, role: 'primary', state: 'stopped', walBytes: 1n }] }), true],
    ['lag above maximum', base({ leaderOptimeBytes: 100n + 1048577n }), false],
    ['lag at maximum', base({ leaderOptimeBytes: 100n + 1048576n }), true],
    ['check_timeline and behind', base({ checkTimeline: true, clusterTimeline: 3 }), false],
    [
      'behind the cluster timeline, no check_timeline: still not healthy (a second timeline with a used number)',
      base({ clusterTimeline: 3 }),
      false,
    ],
    ['behind the cluster timeline but the operator names it in a failover', base({ clusterTimeline: 3, failover: { member: 'a' } }), true],
    [
      'behind the cluster timeline as the candidate of a switchover (a leader named): not healthy',
      base({ clusterTimeline: 3, failover: { leader: 'b', member: 'a' } }),
      false,
    ],
    [
      'manual failover to a reachable other member',
      base({ failover: { member: 'b' }, peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 1n }] }),
      false,
    ],
    [
      'manual failover to a reachable member whose database does not run: race anyway',
      base({ failover: { member: 'b' }, peers: [{ name: 'b', reachable: true, state: 'stopped' }] }),
      true,
    ],
    [
      'switchover to a member behind the cluster timeline: the others race anyway',
      base({
        failover: { leader: 'c', member: 'b' },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 1n, timeline: 1 }],
      }),
      true,
    ],
    ['the candidate ignores the lag rule', base({ failover: { member: 'a' }, leaderOptimeBytes: 10_000_000n }), true],
    [
      "an operator's failover candidate races behind a reachable member by more than maximum_lag_on_failover (the operator's choice)",
      base({
        failover: { member: 'a' },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      true,
    ],
    [
      'a switchover candidate more than maximum_lag_on_failover behind a reachable member does not race (finding 19, seed 182742808)',
      base({
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      false,
    ],
    [
      "a switchover candidate more than maximum_lag_on_failover behind the leader's last optime does not race (finding 19)",
      base({ failover: { leader: 'b', member: 'a' }, leaderOptimeBytes: 100n + 1048577n }),
      false,
    ],
    [
      'a switchover candidate within maximum_lag_on_failover of a reachable member races (no WAL comparison beyond that)',
      base({
        failover: { leader: 'b', member: 'a' },
        leaderOptimeBytes: 150n,
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 100n + 1048576n, timeline: 2 }],
      }),
      true,
    ],
    [
      'a switchover candidate more than maximum_lag_on_failover behind this member does not hold up the race (finding 19)',
      base({
        self: { name: 'c', walBytes: 100n + 1048577n, timeline: 2, tags: {} },
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'a', reachable: true, role: 'replica', state: 'running', walBytes: 100n, timeline: 2 }],
      }),
      true,
    ],
    [
      "a switchover candidate more than maximum_lag_on_failover behind the leader's last optime does not hold up the race (finding 19)",
      base({
        self: { name: 'c', walBytes: 2_000_000n, timeline: 2, tags: {} },
        leaderOptimeBytes: 2_000_000n,
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'a', reachable: true, role: 'replica', state: 'running', walBytes: 100n, timeline: 2 }],
      }),
      true,
    ],
    [
      'the former leader of a switchover races when the candidate is more than maximum_lag_on_failover behind it (finding 19, seed 182742808)',
      base({
        self: { name: 'b', walBytes: 100n + 1048577n, timeline: 2, tags: {} },
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'a', reachable: true, role: 'replica', state: 'running', walBytes: 100n, timeline: 2 }],
      }),
      true,
    ],
    [
      "a switchover candidate behind a reachable member's newer timeline, that member holding more WAL, does not race (finding 23, seed 1570002001)",
      base({
        self: { name: 'a', walBytes: 100n, timeline: 1, tags: {} },
        clusterTimeline: 1,
        failover: { leader: 'c', member: 'a' },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 300n, timeline: 2 }],
      }),
      false,
    ],
    [
      "a switchover candidate behind this member's newer timeline, this member holding more WAL, does not hold up the race (finding 23)",
      base({
        self: { name: 'b', walBytes: 300n, timeline: 2, tags: {} },
        clusterTimeline: 1,
        failover: { leader: 'c', member: 'a' },
        peers: [{ name: 'a', reachable: true, role: 'replica', state: 'running', walBytes: 100n, timeline: 1 }],
      }),
      true,
    ],
    [
      'a switchover candidate on an older timeline but ahead in WAL of the member on the newer one still races (it forks at another switch point)',
      base({
        self: { name: 'a', walBytes: 400n, timeline: 1, tags: {} },
        clusterTimeline: 1,
        failover: { leader: 'c', member: 'a' },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 300n, timeline: 2 }],
      }),
      true,
    ],
    [
      "an operator's failover candidate behind a reachable member's newer timeline still races (the operator's choice)",
      base({
        self: { name: 'a', walBytes: 100n, timeline: 1, tags: {} },
        clusterTimeline: 1,
        failover: { member: 'a' },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 300n, timeline: 2 }],
      }),
      true,
    ],
    [
      'the former leader of a switchover does not step aside for a candidate behind its newer timeline and WAL (finding 23)',
      base({
        self: { name: 'c', walBytes: 300n, timeline: 2, tags: {} },
        clusterTimeline: 1,
        failover: { leader: 'c', member: 'a' },
        peers: [{ name: 'a', reachable: true, role: 'replica', state: 'running', walBytes: 100n, timeline: 1 }],
      }),
      true,
    ],
    [
      'the former leader of a switchover steps aside for a member that can win',
      base({
        failover: { leader: 'a', member: 'b' },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 1n, timeline: 2 }],
      }),
      false,
    ],
    [
      'the former leader of a switchover races when every other member is behind the cluster timeline (finding 13)',
      base({
        failover: { leader: 'a', member: 'b' },
        peers: [
          { name: 'b', reachable: true, state: 'running', walBytes: 1n, timeline: 1 },
          { name: 'c', reachable: true, state: 'running', walBytes: 1n, timeline: 1 },
        ],
      }),
      true,
    ],
    [
      'synchronous mode: the former leader of a switchover races when the sync key lets only it take over (finding 13, seed 2388)',
      base({
        failover: { leader: 'a', member: 'b' },
        sync: { mode: 'quorum', key: { leader: 'a', members: [], quorum: 0 } },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 1n, timeline: 2 }],
      }),
      true,
    ],
    [
      'synchronous mode: the former leader steps aside for a listed member, also while quorum votes settle',
      base({
        failover: { leader: 'a', member: 'b' },
        sync: { mode: 'quorum', key: { leader: 'a', members: ['b'], quorum: 1 }, votesSettleInMs: 500 },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 100n, timeline: 2 }],
      }),
      false,
    ],
    [
      'synchronous mode: a peer ahead that the sync key refuses does not stop its leader (finding 14, seed 31337445)',
      base({
        sync: { mode: 'quorum', key: { leader: 'a', members: [], quorum: 0 } },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 500n, timeline: 1 }],
        clusterTimeline: 1,
      }),
      true,
    ],
    [
      'synchronous mode: a listed peer ahead still does',
      base({
        sync: { mode: 'on', key: { leader: 'L', members: ['a', 'b'], quorum: 0 } },
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 500n, timeline: 2 }],
      }),
      false,
    ],
    [
      'a peer ahead in numbers but behind the cluster timeline does not count',
      base({ peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 500n, timeline: 1 }] }),
      true,
    ],
    [
      'asynchronous: a peer ahead on the cluster timeline does',
      base({ peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 500n, timeline: 2 }] }),
      false,
    ],
    [
      'failsafe: the former leader races when the other members are not listed in the failsafe key (finding 12)',
      base({
        failover: { leader: 'a', member: 'b' },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 1n, timeline: 2 }],
        failsafeListed: (n) => n === 'a',
      }),
      true,
    ],
    [
      'the former leader of a switchover races when the only member that could win is behind it in WAL, the candidate being out (finding 18, seed 881194168)',
      base({
        self: { name: 'a', walBytes: 100n, timeline: 2, tags: {} },
        clusterTimeline: 1,
        failover: { leader: 'a', member: 'b' },
        peers: [
          { name: 'b', reachable: true, state: 'running', walBytes: 40n, timeline: 1 },
          { name: 'c', reachable: true, state: 'running', walBytes: 50n, timeline: 1 },
        ],
        failsafeListed: (n) => n !== 'b',
      }),
      true,
    ],
    [
      'the former leader of a switchover steps aside for a non-candidate member at its WAL position',
      base({
        failover: { leader: 'a', member: 'b' },
        peers: [
          { name: 'b', reachable: true, state: 'stopped' },
          { name: 'c', reachable: true, state: 'running', walBytes: 100n, timeline: 2 },
        ],
      }),
      false,
    ],
    [
      "synchronous mode: the former leader steps aside for a listed member behind it (that member skips the key's former leader)",
      base({
        failover: { leader: 'a', member: 'b' },
        sync: { mode: 'on', key: { leader: 'a', members: ['c'], quorum: 0 } },
        peers: [
          { name: 'b', reachable: true, state: 'stopped' },
          { name: 'c', reachable: true, state: 'running', walBytes: 60n, timeline: 2 },
        ],
      }),
      false,
    ],
    [
      'failsafe: a candidate the failsafe key does not list does not hold up the race (finding 12)',
      base({
        failover: { leader: 'c', member: 'b' },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 1n, timeline: 2 }],
        failsafeListed: (n) => n !== 'b',
      }),
      true,
    ],
    [
      'failsafe: a peer ahead that the failsafe key does not list does not stop a listed member within maximum_lag_on_failover of it (finding 24, seed 1610011577)',
      base({
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 100n + 16_364n, timeline: 2 }],
        failsafeListed: (n) => n !== 'b',
      }),
      true,
    ],
    [
      'failsafe: a peer the failsafe key does not list, at equal WAL with a higher failover_priority, does not stop a listed member (finding 24)',
      base({
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 100n, timeline: 2, tags: { failover_priority: 2 } }],
        failsafeListed: (n) => n !== 'b',
      }),
      true,
    ],
    [
      'failsafe: a peer the failsafe key does not list, more than maximum_lag_on_failover ahead, still stops a listed member',
      base({
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 100n + 1048577n, timeline: 2 }],
        failsafeListed: (n) => n !== 'b',
      }),
      false,
    ],
    [
      'failsafe: a listed peer ahead still stops a listed member',
      base({
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 101n, timeline: 2 }],
        failsafeListed: () => true,
      }),
      false,
    ],
    ['synchronous mode: listed in the sync key', base({ sync: { mode: 'on', key: { leader: 'L', members: ['a'], quorum: 0 } } }), true],
    ['synchronous mode: not listed', base({ sync: { mode: 'on', key: { leader: 'L', members: ['b'], quorum: 0 } } }), false],
    [
      'synchronous mode: the key lists nobody (only its leader may)',
      base({ sync: { mode: 'on', key: { leader: 'L', members: [], quorum: 0 } } }),
      false,
    ],
    [
      "synchronous mode: the key's former leader may",
      base({ sync: { mode: 'on', key: { leader: 'a', members: ['b'], quorum: 0 } } }),
      true,
    ],
    [
      'synchronous mode: the former leader ahead does not block a listed member',
      base({
        sync: { mode: 'on', key: { leader: 'L', members: ['a'], quorum: 0 } },
        peers: [{ name: 'L', reachable: true, role: 'replica', state: 'running', walBytes: 500n }],
      }),
      true,
    ],
    [
      'synchronous mode: an operator failover may name an unlisted member',
      base({ failover: { member: 'a' }, sync: { mode: 'on', key: { leader: 'L', members: ['b'], quorum: 0 } } }),
      true,
    ],
    [
      'synchronous mode: a switchover candidate must be listed',
      base({ failover: { leader: 'L', member: 'a' }, sync: { mode: 'on', key: { leader: 'L', members: ['b'], quorum: 0 } } }),
      false,
    ],
    [
      'synchronous mode: a switchover candidate that left the sync key does not hold up the race',
      base({
        failover: { leader: 'L', member: 'b' },
        sync: { mode: 'on', key: { leader: 'L', members: ['a'], quorum: 0 } },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 90n }],
      }),
      true,
    ],
    [
      'quorum: two votes from the key, the peer not ahead',
      base({
        sync: { mode: 'quorum', key: { leader: 'L', members: ['a', 'b'], quorum: 2 } },
        peers: [{ name: 'b', reachable: true, state: 'running', walBytes: 100n }],
      }),
      true,
    ],
    [
      'quorum: the other voter unreachable',
      base({ sync: { mode: 'quorum', key: { leader: 'L', members: ['a', 'b'], quorum: 2 } }, peers: [{ name: 'b', reachable: false }] }),
      false,
    ],
    [
      'a member that did not answer, its member key more than maximum_lag_on_failover ahead, stops the race (finding 21, seed 1530014777)',
      base({ peers: [{ name: 'b', reachable: false }], published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }] }),
      false,
    ],
    [
      'a member that did not answer, its member key within maximum_lag_on_failover ahead, does not',
      base({ peers: [{ name: 'b', reachable: false }], published: [{ name: 'b', walBytes: 100n + 1048576n, timeline: 2 }] }),
      true,
    ],
    [
      'a member not asked (no peer status), its member key more than maximum_lag_on_failover ahead, stops the race (finding 21)',
      base({ published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }] }),
      false,
    ],
    [
      'a member that answered without any WAL position (an agent just restarted), its member key more than maximum_lag_on_failover ahead, stops the race (finding 31, seed 930067785)',
      base({
        peers: [{ name: 'b', reachable: true, role: 'uninitialized', state: 'stopped' }],
        published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      false,
    ],
    [
      'a member that answered without any WAL position, its member key within maximum_lag_on_failover ahead, does not (finding 31)',
      base({
        peers: [{ name: 'b', reachable: true, role: 'uninitialized', state: 'stopped' }],
        published: [{ name: 'b', walBytes: 100n + 1048576n, timeline: 2 }],
      }),
      true,
    ],
    [
      'a member that answered counts with its answer, not its older member key (finding 21)',
      base({
        peers: [{ name: 'b', reachable: true, role: 'replica', state: 'running', walBytes: 90n, timeline: 2 }],
        published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      true,
    ],
    [
      "this member's own key does not count (finding 21)",
      base({ published: [{ name: 'a', walBytes: 100n + 1048577n, timeline: 2 }] }),
      true,
    ],
    [
      'a silent member whose key is behind the cluster timeline does not count, as a reachable one (finding 21)',
      base({ peers: [{ name: 'b', reachable: false }], published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 1 }] }),
      true,
    ],
    [
      "synchronous mode: the sync key's former leader, silent and ahead, does not count (finding 21)",
      base({
        sync: { mode: 'on', key: { leader: 'b', members: ['a'], quorum: 0 } },
        peers: [{ name: 'b', reachable: false }],
        published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      true,
    ],
    [
      "an operator's failover candidate races whatever a silent member's key shows (finding 21)",
      base({
        failover: { member: 'a' },
        peers: [{ name: 'b', reachable: false }],
        published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      true,
    ],
    [
      "a switchover candidate more than maximum_lag_on_failover behind a silent member's key does not race (findings 19 and 21)",
      base({
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'c', reachable: false }],
        published: [{ name: 'c', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
      false,
    ],
    [
      'more than maximum_lag_on_failover behind a reachable member whose PostgreSQL is not running (its local_wal_end): does not race (finding 28)',
      base({ peers: [{ name: 'b', reachable: true, state: 'starting', stoppedWal: { walBytes: 100n + 1048577n, timeline: 2 } }] }),
      false,
    ],
    [
      'within maximum_lag_on_failover of a member whose PostgreSQL is not running: races (finding 28)',
      base({ peers: [{ name: 'b', reachable: true, state: 'stopped', stoppedWal: { walBytes: 100n + 1048576n, timeline: 2 } }] }),
      true,
    ],
    [
      'a switchover candidate more than maximum_lag_on_failover behind a restarting former leader does not race (finding 28)',
      base({
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'b', reachable: true, state: 'starting', stoppedWal: { walBytes: 100n + 1048577n, timeline: 2 } }],
      }),
      false,
    ],
    [
      'a stopped member whose WAL ends on a timeline behind the cluster timeline does not count (finding 28)',
      base({
        failover: { leader: 'b', member: 'a' },
        peers: [{ name: 'b', reachable: true, state: 'stopped', stoppedWal: { walBytes: 100n + 1048577n, timeline: 1 } }],
      }),
      true,
    ],
  ])('%s → %s', (_n, i, healthy) => {
    expect(isHealthiest(i).healthy).toBe(healthy);
  });

  it('names the member whose answer had no WAL position in the reason (finding 31)', () => {
    const v = isHealthiest(
      base({
        peers: [{ name: 'b', reachable: true, role: 'uninitialized', state: 'stopped' }],
        published: [{ name: 'b', walBytes: 100n + 1048577n, timeline: 2 }],
      }),
    );
    expect(v.reason).toBe(
      'wal position of b (its member key; its answer had no WAL position) is more than maximum_lag_on_failover ahead of mine',
    );
  });

  it('names the member whose PostgreSQL is not running in the reason (finding 28)', () => {
    const v = isHealthiest(
      base({ peers: [{ name: 'b', reachable: true, state: 'starting', stoppedWal: { walBytes: 100n + 1048577n, timeline: 2 } }] }),
    );
    expect(v.reason).toBe('wal position of b (its PostgreSQL is not running) is more than maximum_lag_on_failover ahead of mine');
  });

  it('dates a WAL position from the request and probe_age_ms, and reads local_wal_end only without xlog and divergence (findings 28 and 30)', () => {
    const running = peerFromStatus('x', { xlog: { location: 42 }, probe_age_ms: 700 }, 10_000);
    expect(running).toMatchObject({ walBytes: 42n, walReadAtMs: 9_300 });
    expect(running.stoppedWal).toBeUndefined();
    // No age (the reference's agent), no send time, or a malformed age: undated.
    expect(peerFromStatus('x', { xlog: { location: 42 } }, 10_000).walReadAtMs).toBeUndefined();
    expect(peerFromStatus('x', { xlog: { location: 42 }, probe_age_ms: 5 }).walReadAtMs).toBeUndefined();
    expect(peerFromStatus('x', { xlog: { location: 42 }, probe_age_ms: -1 }, 10_000).walReadAtMs).toBeUndefined();
    const stopped = peerFromStatus('x', { state: 'starting', local_wal_end: { location: 5000, timeline: 3 } }, 10_000);
    expect(stopped.walBytes).toBeUndefined();
    expect(stopped.stoppedWal).toEqual({ walBytes: 5000n, timeline: 3 });
    expect(
      peerFromStatus('x', { state: 'stopped', diverged: 'why', local_wal_end: { location: 5000, timeline: 3 } }).stoppedWal,
    ).toBeUndefined();
    expect(peerFromStatus('x', { state: 'stopped', local_wal_end: { location: -5, timeline: 3 } }).stoppedWal).toBeUndefined();
    expect(peerFromStatus('x', { state: 'stopped', local_wal_end: { location: 5, timeline: 0 } }).stoppedWal).toBeUndefined();
  });

  it('reads WAL positions from status documents', () => {
    expect(peerFromStatus('x', { role: 'primary', state: 'running', xlog: { location: 42 } }).walBytes).toBe(42n);
    expect(peerFromStatus('x', { xlog: { received_location: 50, replayed_location: 40 } }).walBytes).toBe(50n);
    expect(peerFromStatus('x', undefined).reachable).toBe(false);
  });

  it('reads the WAL positions the member keys publish, its own and keys without xlog_location left out (finding 21)', () => {
    const data = { conn_url: 'postgres://h:5432/postgres', api_url: 'http://h:8008/ha', role: 'replica', version: '0.1.0' } as const;
    expect(
      publishedPositions(
        [
          { name: 'a', data: { ...data, state: 'running', xlog_location: 500, timeline: 2 } },
          { name: 'b', data: { ...data, state: 'running', xlog_location: 18159158, timeline: 1 } },
          { name: 'c', data: { ...data, state: 'stopped' } },
          { name: 'd', data: { ...data, state: 'running', xlog_location: 7 } },
        ],
        'a',
      ),
    ).toEqual([
      { name: 'b', walBytes: 18159158n, timeline: 1 },
      { name: 'd', walBytes: 7n },
    ]);
  });
});

describe('timeline history and divergence', () => {
  const file = '1\t0/3000060\tno recovery target specified\n\n2\t0/5000000\tno recovery target specified\n';
  it('parses a history file', () => {
    expect(parseHistoryFile(file)).toEqual([
      { timeline: 1, switchLsn: 0x3000060n, reason: 'no recovery target specified' },
      { timeline: 2, switchLsn: 0x5000000n, reason: 'no recovery target specified' },
    ]);
  });
  it('builds the DCS history value with the new leader on the last entry', () => {
    const h = historyEntries(parseHistoryFile(file), { now: '2026-01-01T00:00:00.000Z', newLeader: 'b' });
    expect(h).toEqual([
      [1, 0x3000060, 'no recovery target specified', '2026-01-01T00:00:00.000Z'],
      [2, 0x5000000, 'no recovery target specified', '2026-01-01T00:00:00.000Z', 'b'],
    ]);
  });
  const hist = [[1, 1000, 'x']] as [number, number, string][];
  it.each([
    ['same timeline', { clusterState: 'shut down', timeline: 2, checkpointLsn: 5000n, minRecoveryLsn: 0n }, 'ok'],
    ['clean shutdown before the switch', { clusterState: 'shut down', timeline: 1, checkpointLsn: 900n, minRecoveryLsn: 0n }, 'ok'],
    ['clean shutdown past the switch', { clusterState: 'shut down', timeline: 1, checkpointLsn: 1000n, minRecoveryLsn: 0n }, 'diverged'],
    ['crashed primary', { clusterState: 'in production', timeline: 1, checkpointLsn: 10n, minRecoveryLsn: 0n }, 'diverged'],
    ['replica behind the switch', { clusterState: 'shut down in recovery', timeline: 1, checkpointLsn: 500n, minRecoveryLsn: 800n }, 'ok'],
    ['local timeline ahead', { clusterState: 'shut down', timeline: 3, checkpointLsn: 10n, minRecoveryLsn: 0n }, 'diverged'],
  ])('%s → %s', (_n, local, kind) => {
    expect(checkDivergence(local, 2, hist).kind).toBe(kind);
  });
  it('is unknown without a history entry for the local timeline', () => {
    expect(checkDivergence({ clusterState: 'shut down', timeline: 1, checkpointLsn: 1n, minRecoveryLsn: 0n }, 2, undefined).kind).toBe(
      'unknown',
    );
  });
});
