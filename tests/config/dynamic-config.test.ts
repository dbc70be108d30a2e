import { describe, expect, it } from 'vitest';
import { effectiveDynamicConfig, validateDynamicConfig } from '../../src/config/dynamic-schema.ts';

describe('validateDynamicConfig', () => {
  it('accepts an empty document; the effective config has the defaults', () => {
    const r = validateDynamicConfig({});
    expect(r).toEqual({ ok: true, value: {} });
    if (r.ok) expect(effectiveDynamicConfig(r.value).ttl).toBe(30);
  });

  it('keeps unknown keys and turns boolean parameters into on/off', () => {
    const r = validateDynamicConfig({
      ttl: 60,
      pause: true,
      failsafe_mode: false,
      synchronous_mode: 'quorum',
      slots: { s1: { type: 'physical' } },
      database: { use_slots: false, parameters: { wal_log_hints: true, max_connections: 200, hot_standby: 'on' }, note: ['x'] },
    });
    expect(r).toEqual({
      ok: true,
      value: {
        ttl: 60,
        pause: true,
        failsafe_mode: false,
        synchronous_mode: 'quorum',
        slots: { s1: { type: 'physical' } },
        database: { use_slots: false, parameters: { wal_log_hints: 'on', max_connections: 200, hot_standby: 'on' }, note: ['x'] },
      },
    });
  });

  it('refuses impossible synchronous settings, naming the field', () => {
    const r = validateDynamicConfig({
      synchronous_mode: 'on',
      synchronous_mode_strict: 'yes',
      synchronous_node_count: 0,
      maximum_lag_on_syncnode: -2,
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^synchronous_mode: must be true, false or "quorum"/),
          expect.stringMatching(/^synchronous_mode_strict: must be true or false/),
          expect.stringMatching(/^synchronous_node_count: must be at least 1, got 0/),
          expect.stringMatching(/^maximum_lag_on_syncnode: must be -1 \(no limit\) or more, got -2/),
        ]),
      );
    }
    expect(validateDynamicConfig({ synchronous_node_count: 101 }).ok).toBe(false);
    expect(
      validateDynamicConfig({
        synchronous_mode: true,
        synchronous_mode_strict: true,
        synchronous_node_count: 2,
        maximum_lag_on_syncnode: 1048576,
      }).ok,
    ).toBe(true);
  });

  it("checks values only: which keys may be written is unreadKeys's rule (tests/config/dynamic-keys.test.ts)", () => {
    expect(validateDynamicConfig({ max_timelines_history: 5, database: { pg_hba: ['x'] }, loop_wiat: 5 }).ok).toBe(true);
  });

  it('lists every type problem with its path', () => {
    const r = validateDynamicConfig({
      ttl: '30',
      loop_wait: 1.5,
      retry_timeout: 0,
      maximum_lag_on_failover: -1,
      check_timeline: 'yes',
      pause: 1,
      database: { use_slots: 'on', use_db_rewind: null, parameters: { a: [1] } },
    });
    expect(r).toEqual({
      ok: false,
      problems: [
        'ttl: must be an integer, got "30"',
        'loop_wait: must be an integer, got 1.5',
        'retry_timeout: must be at least 1, got 0',
        'maximum_lag_on_failover: must be 0 or more, got -1',
        'check_timeline: must be true or false, got "yes"',
        'pause: must be true or false, got 1',
        'database.use_slots: must be true or false, got "on"',
        'database.use_db_rewind: must be true or false, got null',
        'database.parameters.a: must be a string, number or boolean, got Array',
      ],
    });
  });

  it('applies the timing rule to the document with defaults filled in', () => {
    expect(validateDynamicConfig({ ttl: 20 })).toEqual({
      ok: false,
      problems: ['(root): loop_wait + 2*retry_timeout must not exceed ttl: loop_wait 10 + 2*retry_timeout 10 = 30 > ttl 20'],
    });
    expect(validateDynamicConfig({ ttl: 20, loop_wait: 5, retry_timeout: 5 }).ok).toBe(true);
  });

  it('refuses timings above the maxima, naming the field (no adjustment, unlike the DCS copy)', () => {
    expect(validateDynamicConfig({ ttl: 86401, loop_wait: 3601, retry_timeout: 3601 })).toEqual({
      ok: false,
      problems: [
        'ttl: must be at most 86400, got 86401',
        'loop_wait: must be at most 3600, got 3601',
        'retry_timeout: must be at most 3600, got 3601',
      ],
    });
    expect(validateDynamicConfig({ loop_wait: 2147484 })).toEqual({
      ok: false,
      problems: [
        'loop_wait: must be at most 3600, got 2147484',
        '(root): loop_wait + 2*retry_timeout must not exceed ttl: loop_wait 2147484 + 2*retry_timeout 10 = 2147504 > ttl 30',
      ],
    });
    expect(validateDynamicConfig({ ttl: 86400, loop_wait: 3600, retry_timeout: 3600 }).ok).toBe(true);
  });

  it('still refuses a timing-rule violation (ttl 2 with loop_wait 2) rather than adjusting it', () => {
    const r = validateDynamicConfig({ ttl: 2, loop_wait: 2 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems).toEqual([expect.stringMatching(/^\(root\): loop_wait \+ 2\*retry_timeout must not exceed ttl/)]);
  });

  it('accepts database.remove_data_directory_on_diverged_timelines (boolean, default false)', () => {
    const r = validateDynamicConfig({ database: { remove_data_directory_on_diverged_timelines: true } });
    expect(r.ok).toBe(true);
    if (r.ok) expect(effectiveDynamicConfig(r.value).database.remove_data_directory_on_diverged_timelines).toBe(true);
    const d = validateDynamicConfig({});
    if (d.ok) expect(effectiveDynamicConfig(d.value).database.remove_data_directory_on_diverged_timelines).toBe(false);
    expect(validateDynamicConfig({ database: { remove_data_directory_on_diverged_timelines: 'yes' } })).toEqual({
      ok: false,
      problems: ['database.remove_data_directory_on_diverged_timelines: must be true or false, got "yes"'],
    });
  });

  it('accepts database.remove_data_directory_on_rewind_failure (boolean, default true)', () => {
    const r = validateDynamicConfig({ database: { use_db_rewind: true, remove_data_directory_on_rewind_failure: false } });
    expect(r.ok).toBe(true);
    if (r.ok) expect(effectiveDynamicConfig(r.value).database.remove_data_directory_on_rewind_failure).toBe(false);
    const d = validateDynamicConfig({});
    expect(d.ok).toBe(true);
    if (d.ok) expect(effectiveDynamicConfig(d.value).database.remove_data_directory_on_rewind_failure).toBe(true);
    expect(validateDynamicConfig({ database: { remove_data_directory_on_rewind_failure: 1 } })).toEqual({
      ok: false,
      problems: ['database.remove_data_directory_on_rewind_failure: must be true or false, got 1'],
    });
  });

  it('refuses a document that is not a mapping', () => {
    expect(validateDynamicConfig([1])).toEqual({ ok: false, problems: ['(root): must be a mapping, got Array'] });
  });
});
