/** `quorum_failover_window` in the dynamic configuration (issue 28): only with strict synchronous mode; refused naming the key. */
import { describe, expect, it } from 'vitest';
import { validateDynamicConfig } from '../../src/config/dynamic-schema.ts';
import { DYNAMIC_TOP_KEYS } from '../../src/config/dynamic-keys.ts';

const problems = (doc: unknown) => {
  const r = validateDynamicConfig(doc);
  return r.ok ? [] : r.problems;
};

describe('quorum_failover_window', () => {
  it('is a key the agent reads', () => {
    expect(DYNAMIC_TOP_KEYS).toContain('quorum_failover_window');
  });

  it('is accepted with synchronous mode quorum or true and strict; 0 (off) anywhere', () => {
    expect(problems({ quorum_failover_window: 2, synchronous_mode: 'quorum', synchronous_mode_strict: true })).toEqual([]);
    expect(problems({ quorum_failover_window: 1.5, synchronous_mode: true, synchronous_mode_strict: true })).toEqual([]);
    expect(problems({ quorum_failover_window: 0 })).toEqual([]);
  });

  it.each([
    [{ quorum_failover_window: 2 }, /^quorum_failover_window: needs synchronous_mode "quorum" or true with synchronous_mode_strict: true/],
    [{ quorum_failover_window: 2, synchronous_mode: 'quorum' }, /^quorum_failover_window: needs synchronous_mode/],
    [
      { quorum_failover_window: -1, synchronous_mode: 'quorum', synchronous_mode_strict: true },
      /^quorum_failover_window: must be a number of seconds >= 0/,
    ],
    [
      { quorum_failover_window: '2', synchronous_mode: 'quorum', synchronous_mode_strict: true },
      /^quorum_failover_window: must be a number of seconds, got/,
    ],
  ])('refuses %j naming the key', (doc, expected) => {
    const p = problems(doc);
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(expected);
  });
});
