/** The rules of quorum failover (src/domain/quorum-failover.ts; issue 28). */
import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../src/domain/dynamic-config.ts';
import {
  fenceIncomplete,
  fenceOf,
  fenceTaker,
  joinFence,
  leaveFence,
  quorumFailoverProblem,
  quorumFailoverSettings,
  shouldFence,
  witnessesNeeded,
} from '../../src/domain/quorum-failover.ts';
import { protectiveKey, type SyncSet } from '../../src/domain/sync-standby.ts';

describe('quorum_failover_window: only with strict synchronous mode', () => {
  it.each([
    [{ quorum_failover_window: 2, synchronous_mode: 'quorum', synchronous_mode_strict: true }, undefined],
    [{ quorum_failover_window: 2, synchronous_mode: true, synchronous_mode_strict: true }, undefined],
    [{ quorum_failover_window: 0, synchronous_mode: false }, undefined],
    [{ synchronous_mode: false }, undefined],
  ] as const)('%j → allowed', (config, problem) => {
    expect(quorumFailoverProblem(config as never)).toBe(problem);
  });

  it.each([
    [{ quorum_failover_window: 2, synchronous_mode: 'quorum' }],
    [{ quorum_failover_window: 2, synchronous_mode: true, synchronous_mode_strict: false }],
    [{ quorum_failover_window: 2 }],
  ])('%j → refused, naming the reason', (config) => {
    expect(quorumFailoverProblem(config as never)).toMatch(
      /^quorum_failover_window: needs synchronous_mode "quorum" or true with synchronous_mode_strict: true/,
    );
  });

  it('a bad value is refused', () => {
    expect(
      quorumFailoverProblem({ quorum_failover_window: -1, synchronous_mode: 'quorum', synchronous_mode_strict: true } as never),
    ).toMatch(/must be a number of seconds/);
  });

  it('settings: the window in ms and the mode; off without the preconditions', () => {
    expect(
      quorumFailoverSettings(withDefaults({ quorum_failover_window: 1.5, synchronous_mode: 'quorum', synchronous_mode_strict: true })),
    ).toEqual({ windowMs: 1500, mode: 'quorum' });
    expect(quorumFailoverSettings(withDefaults({ quorum_failover_window: 1.5, synchronous_mode: 'quorum' }))).toBeUndefined();
    expect(quorumFailoverSettings(withDefaults({ synchronous_mode: 'quorum', synchronous_mode_strict: true }))).toBeUndefined();
  });
});

describe('the fence', () => {
  // 5 members: n1 leads; ANY 2 (n2, n3, n4, n5); the key protects it with quorum 3.
  const set: SyncSet = { kind: 'any', num: 2, members: ['n2', 'n3', 'n4', 'n5'] };
  const key = protectiveKey('quorum', 'n1', ['n2', 'n3', 'n4', 'n5'], [set]);
  const standbys = ['n2', 'n3', 'n4', 'n5'];

  it('the key of ANY 2 of 4 has quorum 3: three fenced standbys silence the primary, two do not', () => {
    expect(key.quorum).toBe(3);
    const two = joinFence(joinFence(undefined, 'n1', 'n2', 100n), 'n1', 'n3', 120n);
    expect(fenceIncomplete('quorum', key, two, standbys)).toBe('2 of the 3 synchronous standbys needed have fenced n1');
    const three = joinFence(two, 'n1', 'n4', 90n);
    expect(fenceIncomplete('quorum', key, three, standbys)).toBeUndefined();
  });

  it('the proof, exhaustively for this key: with any 3 of the 4 fenced no 2 acknowledgers are left', () => {
    for (const out of standbys) {
      const fenced = standbys.filter((m) => m !== out);
      const left = set.members.filter((m) => !fenced.includes(m));
      expect(left.length).toBeLessThan(set.num);
    }
  });

  it('mode on: one fenced synchronous standby silences the primary, but the witnesses need a majority (no false failover on one cut link)', () => {
    const onKey = protectiveKey('on', 'n1', ['n2'], [{ kind: 'first', num: 1, members: ['n2'] }]);
    const one = joinFence(undefined, 'n1', 'n2', 100n);
    expect(fenceIncomplete('on', onKey, one, ['n2', 'n3'])).toBe('1 of the 2 members needed have fenced n1');
    expect(fenceIncomplete('on', onKey, joinFence(one, 'n1', 'n3', 80n), ['n2', 'n3'])).toBeUndefined();
    // An asynchronous witness alone does not silence the primary.
    expect(fenceIncomplete('on', onKey, joinFence(undefined, 'n1', 'n3', 80n), ['n2', 'n3'])).toBe(
      '0 of the 1 synchronous standbys needed have fenced n1',
    );
  });

  it('a fence of another leader, or an empty key, never completes', () => {
    const f = joinFence(undefined, 'n9', 'n2', 1n);
    expect(fenceIncomplete('quorum', key, f, standbys)).toBe('no fence of n1');
    expect(fenceIncomplete('quorum', { leader: 'n1', members: [], quorum: 0 }, joinFence(undefined, 'n1', 'n2', 1n), standbys)).toMatch(
      /lists no synchronous standby/,
    );
  });

  it('witnesses: a majority of the other members', () => {
    expect([1, 2, 3, 4, 5].map(witnessesNeeded)).toEqual([1, 2, 2, 3, 3]);
  });

  it('the taker: the furthest WAL end, then the lowest name', () => {
    expect(fenceTaker({ leader: 'n1', members: { n3: 100, n2: 120, n4: 120 } })).toBe('n2');
    expect(fenceTaker({ leader: 'n1', members: {} })).toBeUndefined();
  });

  it('joining a fence of another leader starts a new record; leaving the last member removes it', () => {
    expect(joinFence({ leader: 'n9', members: { n2: 5 } }, 'n1', 'n3', 7n)).toEqual({ leader: 'n1', members: { n3: 7 } });
    expect(leaveFence({ leader: 'n1', members: { n2: 5, n3: 6 } }, 'n2')).toEqual({ leader: 'n1', members: { n3: 6 } });
    expect(leaveFence({ leader: 'n1', members: { n2: 5 } }, 'n2')).toBeUndefined();
  });

  it('fenceOf parses what the key stores and refuses the rest', () => {
    expect(fenceOf({ leader: 'n1', members: { n2: 5 } })).toEqual({ leader: 'n1', members: { n2: 5 } });
    expect(fenceOf({ leader: 'n1', members: { n2: 'x' } })).toBeUndefined();
    expect(fenceOf(null)).toBeUndefined();
    expect(fenceOf('x')).toBeUndefined();
  });
});

describe('shouldFence', () => {
  const settings = { windowMs: 2000, mode: 'quorum' as const };
  it('only after the leader did not answer for the whole window, and while not streaming', () => {
    expect(shouldFence({ settings, nowMs: 10_000, streaming: false, unreachableSinceMs: 8000 })).toBe(true);
    expect(shouldFence({ settings, nowMs: 10_000, streaming: false, unreachableSinceMs: 8500 })).toBe(false);
    expect(shouldFence({ settings, nowMs: 10_000, streaming: true, unreachableSinceMs: 1000 })).toBe(false);
    expect(shouldFence({ settings, nowMs: 10_000, streaming: false, unreachableSinceMs: undefined })).toBe(false);
  });
});
