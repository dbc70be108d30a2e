/**
 * promtool on the shipped monitoring files (Debian's prometheus package): the rule files load,
 * their unit tests pass (each alert fires on the condition it names and a healthy cluster stays
 * silent: monitoring/prometheus/tests/*.test.yml), and the example Prometheus configuration with
 * its rule files is valid.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** Runs promtool; exit code and output. */
function promtool(...args: string[]): { code: number; output: string } {
  try {
    return { code: 0, output: execFileSync('promtool', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (e) {
    const err = e as { status: number; stdout?: string; stderr?: string };
    return { code: err.status, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

describe('monitoring files under promtool', () => {
  it('check rules: both rule files load', () => {
    const r = promtool('check', 'rules', 'monitoring/prometheus/ha.rules.yml', 'monitoring/prometheus/db-exporter.rules.yml');
    expect(r.code, r.output).toBe(0);
    expect(r.output.match(/SUCCESS: \d+ rules found/g)).toHaveLength(2);
  });

  it.each(['ha', 'db-exporter'])(
    'test rules: the %s rules fire on the conditions they name and stay silent on a healthy cluster',
    (name) => {
      const r = promtool('test', 'rules', `monitoring/prometheus/tests/${name}.rules.test.yml`);
      expect(r.code, r.output).toBe(0);
      expect(r.output).toContain('SUCCESS');
    },
  );

  it('check config: the example Prometheus configuration and its rule files', () => {
    const r = promtool('check', 'config', 'examples/prometheus/prometheus.yml');
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/SUCCESS: 2 rule files found/);
  });
});
