import { describe, expect, it } from 'vitest';
import { sanitizeDynamicConfig } from '../../src/config/dynamic-sanitize.ts';
import { DYNAMIC_DEFAULTS, TIMING_BOUNDS, timingError, withDefaults, type DynamicConfig } from '../../src/domain/dynamic-config.ts';

/** A last good configuration that differs from the defaults, so "kept" is visible. */
const lastGood: DynamicConfig = withDefaults({ ttl: 40, loop_wait: 5, retry_timeout: 5, pause: true });

describe('sanitizeDynamicConfig: documents with type problems keep the last good configuration', () => {
  it.each<[string, unknown, string[]]>([
    ['ttl -5', { ttl: -5 }, ['ttl: must be at least 1, got -5']],
    ['ttl "abc"', { ttl: 'abc' }, ['ttl: must be an integer, got "abc"']],
    ['ttl 0', { ttl: 0 }, ['ttl: must be at least 1, got 0']],
    ['loop_wait 1.5', { loop_wait: 1.5 }, ['loop_wait: must be an integer, got 1.5']],
    ['a string document', 'ttl: 30', ['(root): must be a mapping, got "ttl: 30"']],
    ['null', null, ['(root): must be a mapping, got null']],
    ['undefined (no key)', undefined, ['(root): must be a mapping, got undefined']],
    ['a list', [1, 2], ['(root): must be a mapping, got Array']],
    ['a number', 30, ['(root): must be a mapping, got 30']],
    ['synchronous_mode garbage', { synchronous_mode: 'yes' }, ['synchronous_mode: must be true, false or "quorum", got "yes"']],
    ['database not a mapping', { database: 'x' }, ['database: must be a mapping, got "x"']],
    [
      'the new setting not a boolean',
      { database: { remove_data_directory_on_diverged_timelines: 'true' } },
      ['database.remove_data_directory_on_diverged_timelines: must be true or false, got "true"'],
    ],
  ])('%s', (_name, raw, problems) => {
    const r = sanitizeDynamicConfig(raw, lastGood);
    expect(r.problems).toEqual(problems);
    expect(r.adjustments).toEqual([]);
    expect(r.config).toBe(lastGood);
  });

  it('lists every bad field, not only the first', () => {
    const r = sanitizeDynamicConfig(
      { ttl: 'abc', loop_wait: -1, retry_timeout: 2.5, maximum_lag_on_failover: -3, pause: 'no', database: { use_slots: 1 } },
      lastGood,
    );
    expect(r.config).toBe(lastGood);
    expect(r.problems).toEqual([
      'ttl: must be an integer, got "abc"',
      'loop_wait: must be at least 1, got -1',
      'retry_timeout: must be an integer, got 2.5',
      'maximum_lag_on_failover: must be 0 or more, got -3',
      'pause: must be true or false, got "no"',
      'database.use_slots: must be true or false, got 1',
    ]);
  });
});

describe('sanitizeDynamicConfig: a good configuration passes unchanged', () => {
  it.each<[string, Record<string, unknown>]>([
    ['the empty document (defaults)', {}],
    ['the e2e timings', { ttl: 10, loop_wait: 2, retry_timeout: 3 }],
    ['the smallest timings', { ttl: 7, loop_wait: 1, retry_timeout: 3 }],
    ['the largest timings', { ttl: 86400, loop_wait: 3600, retry_timeout: 3600 }],
    [
      "every known key, and tools' keys",
      {
        ttl: 30,
        loop_wait: 10,
        retry_timeout: 10,
        maximum_lag_on_failover: 0,
        check_timeline: true,
        pause: false,
        failsafe_mode: true,
        synchronous_mode: 'quorum',
        slots: { s1: { type: 'physical' } },
        database: {
          use_slots: false,
          use_db_rewind: true,
          remove_data_directory_on_diverged_timelines: true,
          parameters: { max_connections: 200, hot_standby: 'on' },
        },
        'x-my-tool': { note: ['kept as it is'] },
      },
    ],
  ])('%s', (_name, raw) => {
    const r = sanitizeDynamicConfig(raw, lastGood);
    expect(r).toEqual({ config: withDefaults(raw), problems: [], adjustments: [] });
  });

  it('fills the defaults, the new setting included (false)', () => {
    const r = sanitizeDynamicConfig({}, lastGood);
    expect(r.config).toEqual(DYNAMIC_DEFAULTS);
    expect(r.config.database.remove_data_directory_on_diverged_timelines).toBe(false);
  });

  it('turns boolean parameters into on/off, as the API does', () => {
    const r = sanitizeDynamicConfig({ database: { parameters: { wal_log_hints: true } } }, lastGood);
    expect(r.config.database.parameters).toEqual({ wal_log_hints: 'on' });
    expect(r.adjustments).toEqual([]);
  });
});

describe('sanitizeDynamicConfig: timing adjustments (patroni.md §3.1)', () => {
  it('ttl 2 with loop_wait 2: ttl raised to 7, then loop_wait, then retry_timeout lowered', () => {
    const r = sanitizeDynamicConfig({ ttl: 2, loop_wait: 2 }, lastGood);
    expect(r.problems).toEqual([]);
    expect(r.config).toMatchObject({ ttl: 7, loop_wait: 1, retry_timeout: 3 });
    expect(r.adjustments).toEqual([
      'ttl raised from 2 to 7 s (minimum 7 s)',
      'loop_wait lowered from 2 to 1 s (loop_wait + 2*retry_timeout must not exceed ttl 7, was 2 + 2*10 = 22)',
      'retry_timeout lowered from 10 to 3 s (loop_wait + 2*retry_timeout must not exceed ttl 7, was 1 + 2*10 = 21)',
    ]);
    expect(timingError(r.config)).toBeUndefined();
  });

  it('loop_wait 2147484 (beyond a Node timer): clamped to 3600, then lowered by the rule', () => {
    const r = sanitizeDynamicConfig({ loop_wait: 2147484 }, lastGood);
    expect(r.config).toMatchObject({ ttl: 30, loop_wait: 10, retry_timeout: 10 });
    expect(r.adjustments).toEqual([
      'loop_wait lowered from 2147484 to 3600 s (maximum 3600 s)',
      'loop_wait lowered from 3600 to 10 s (loop_wait + 2*retry_timeout must not exceed ttl 30, was 3600 + 2*10 = 3620)',
    ]);
  });

  it('clamps every timing to its maximum, in the order loop_wait, retry_timeout, ttl', () => {
    const r = sanitizeDynamicConfig({ ttl: 10_000_000, loop_wait: 10_000_000, retry_timeout: 10_000_000 }, lastGood);
    expect(r.config).toMatchObject({ ttl: 86400, loop_wait: 3600, retry_timeout: 3600 });
    expect(r.adjustments).toEqual([
      'loop_wait lowered from 10000000 to 3600 s (maximum 3600 s)',
      'retry_timeout lowered from 10000000 to 3600 s (maximum 3600 s)',
      'ttl lowered from 10000000 to 86400 s (maximum 86400 s)',
    ]);
    for (const key of ['ttl', 'loop_wait', 'retry_timeout'] as const) {
      expect(r.config[key] * 1000).toBeLessThanOrEqual(2 ** 31 - 1);
    }
  });

  it('raises retry_timeout to 3', () => {
    const r = sanitizeDynamicConfig({ ttl: 30, loop_wait: 10, retry_timeout: 1 }, lastGood);
    expect(r.config).toMatchObject({ ttl: 30, loop_wait: 10, retry_timeout: 3 });
    expect(r.adjustments).toEqual(['retry_timeout raised from 1 to 3 s (minimum 3 s)']);
  });

  it('lowers only loop_wait when that is enough', () => {
    const r = sanitizeDynamicConfig({ ttl: 30, loop_wait: 20, retry_timeout: 10 }, lastGood);
    expect(r.config).toMatchObject({ ttl: 30, loop_wait: 10, retry_timeout: 10 });
    expect(r.adjustments).toEqual([
      'loop_wait lowered from 20 to 10 s (loop_wait + 2*retry_timeout must not exceed ttl 30, was 20 + 2*10 = 40)',
    ]);
  });

  it('lowers loop_wait to 1 and then retry_timeout to floor((ttl - 1) / 2)', () => {
    const r = sanitizeDynamicConfig({ ttl: 20 }, lastGood);
    expect(r.config).toMatchObject({ ttl: 20, loop_wait: 1, retry_timeout: 9 });
    expect(r.adjustments).toEqual([
      'loop_wait lowered from 10 to 1 s (loop_wait + 2*retry_timeout must not exceed ttl 20, was 10 + 2*10 = 30)',
      'retry_timeout lowered from 10 to 9 s (loop_wait + 2*retry_timeout must not exceed ttl 20, was 1 + 2*10 = 21)',
    ]);
  });

  it('leaves loop_wait alone when it is already 1 and lowers retry_timeout', () => {
    const r = sanitizeDynamicConfig({ ttl: 8, loop_wait: 1, retry_timeout: 5 }, lastGood);
    expect(r.config).toMatchObject({ ttl: 8, loop_wait: 1, retry_timeout: 3 });
    expect(r.adjustments).toEqual([
      'retry_timeout lowered from 5 to 3 s (loop_wait + 2*retry_timeout must not exceed ttl 8, was 1 + 2*5 = 11)',
    ]);
  });

  it('keeps unknown keys and other settings while adjusting', () => {
    const r = sanitizeDynamicConfig({ ttl: 2, pause: true, slots: { a: {} }, database: { use_slots: false } }, lastGood);
    expect(r.config.pause).toBe(true);
    expect(r.config['slots']).toEqual({ a: {} });
    expect(r.config.database.use_slots).toBe(false);
  });

  it('always ends within the bounds and satisfying the rule', () => {
    const values = [1, 2, 3, 5, 6, 7, 8, 9, 10, 19, 20, 21, 30, 3599, 3600, 3601, 86399, 86400, 86401, 2147484];
    for (const ttl of values) {
      for (const loop_wait of values) {
        for (const retry_timeout of values) {
          const { config, problems } = sanitizeDynamicConfig({ ttl, loop_wait, retry_timeout }, lastGood);
          expect(problems).toEqual([]);
          expect(timingError(config)).toBeUndefined();
          for (const key of ['ttl', 'loop_wait', 'retry_timeout'] as const) {
            expect(config[key]).toBeGreaterThanOrEqual(TIMING_BOUNDS[key].min);
            expect(config[key]).toBeLessThanOrEqual(TIMING_BOUNDS[key].max);
          }
        }
      }
    }
  });

  it('does not change its arguments', () => {
    const raw = { ttl: 2, loop_wait: 2 };
    const before = structuredClone(lastGood);
    sanitizeDynamicConfig(raw, lastGood);
    expect(raw).toEqual({ ttl: 2, loop_wait: 2 });
    expect(lastGood).toEqual(before);
  });
});

describe('sanitizeDynamicConfig: settings this agent does not implement', () => {
  it('are ignored and said, never silently', () => {
    const r = sanitizeDynamicConfig({ ttl: 30, primary_race_backoff: 5, database: { recovery_conf: { a: 1 } } }, withDefaults({}));
    expect(r.problems).toEqual([]);
    expect(r.adjustments).toEqual([
      expect.stringMatching(/^ignored primary_race_backoff: not supported/),
      expect.stringMatching(/^ignored database\.recovery_conf: not supported/),
    ]);
  });
});
