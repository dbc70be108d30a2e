/** The `watchdog` section of ha.yml (docs/configuration.md, docs/ha.md "Fencing"). */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/index.ts';
import { effectiveMarginMs } from '../../src/node/lock/fencing.ts';
import { GOOD_YAML } from './fixtures.ts';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('watchdog', () => {
  it('defaults to mode automatic with safety_margin 5, as the reference (not marked as written: fitting it to the timing is no warning)', () => {
    expect(parseConfig(GOOD_YAML, {}).watchdog).toEqual({ mode: 'automatic', safety_margin: 5 });
    expect(parseConfig(`${GOOD_YAML}watchdog: { mode: required }\n`, {}).watchdog).toEqual({ mode: 'required', safety_margin: 5 });
  });

  it('accepts off, automatic, required and -1 (ttl / 2)', () => {
    for (const mode of ['off', 'automatic', 'required']) {
      expect(parseConfig(`${GOOD_YAML}watchdog: { mode: ${mode}, safety_margin: 3 }\n`, {}).watchdog).toEqual({
        mode,
        safety_margin: 3,
        safety_margin_set: true,
      });
    }
    expect(parseConfig(`${GOOD_YAML}watchdog: { safety_margin: -1 }\n`, {}).watchdog.safety_margin).toBe(-1);
  });

  it('refuses bad values, naming the field', () => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}watchdog: { mode: sometimes }\n`, {}))).toEqual([
      'watchdog.mode: must be one of off, automatic, required, got "sometimes"',
    ]);
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}watchdog: { safety_margin: 0 }\n`, {}))).toEqual([
      'watchdog.safety_margin: must be at least 1 second (or -1 for ttl / 2), got 0',
    ]);
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}watchdog: { safety_margin: "5" }\n`, {}))[0]).toMatch(
      /^watchdog\.safety_margin: must be a number/,
    );
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}watchdog: { device: /dev/watchdog }\n`, {}))).toEqual([
      'watchdog.device: not implemented: there is no watchdog device; the fence is the agent\'s own (docs/ha.md "Fencing")',
    ]);
  });

  it('refuses a safety_margin that leaves no time within bootstrap.dcs.ttl (default 30)', () => {
    expect(problemsOf(() => parseConfig(`${GOOD_YAML}watchdog: { safety_margin: 30 }\n`, {}))).toEqual([
      'watchdog.safety_margin: 30 s leaves no time within bootstrap.dcs.ttl 30 s (the fence fires at last renewal + ttl − safety_margin); use less than ttl, e.g. 5, or -1 for ttl / 2',
    ]);
    const withTtl = `${GOOD_YAML}bootstrap:\n  dcs: { ttl: 10, loop_wait: 2, retry_timeout: 3 }\nwatchdog: { safety_margin: 10 }\n`;
    expect(problemsOf(() => parseConfig(withTtl, {}))[0]).toMatch(
      /^watchdog\.safety_margin: 10 s leaves no time within bootstrap\.dcs\.ttl 10 s/,
    );
    expect(parseConfig(withTtl.replace('safety_margin: 10', 'safety_margin: 9'), {}).watchdog.safety_margin).toBe(9);
  });
});

describe('effectiveMarginMs', () => {
  it('is the setting, or ttl / 2 for -1 and for a margin of ttl or more', () => {
    expect(effectiveMarginMs(5, 10_000)).toEqual({ marginMs: 5000, adjusted: false });
    expect(effectiveMarginMs(-1, 10_000)).toEqual({ marginMs: 5000, adjusted: false });
    expect(effectiveMarginMs(10, 10_000)).toEqual({ marginMs: 5000, adjusted: true });
    // Capped at retry_timeout / 2: the fence fires after the agent's own deadline (ttl − retry_timeout).
    expect(effectiveMarginMs(5, 10_000, 3000)).toEqual({ marginMs: 1500, adjusted: true });
    expect(effectiveMarginMs(5, 30_000, 10_000)).toEqual({ marginMs: 5000, adjusted: false });
  });
});
