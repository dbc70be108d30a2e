/**
 * `ha chart` draws DOT and SVG in the machine's readable layout, the one /ui shows
 * (docs/charts.md "Layout"): the lifecycle groups are there, one edge per pair of states.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function chart(machine: string, format: string): string {
  return execFileSync(process.execPath, ['--import', 'tsx', 'src/cli/ha.ts', 'chart', machine, '--format', format], { encoding: 'utf8' });
}

describe('ha chart', () => {
  it('draws the database machine in its readable layout (lifecycle groups, top to bottom)', () => {
    const dot = chart('database', 'dot');
    expect(dot).toContain('rankdir=TB;');
    expect(dot).toMatch(/id="group:[a-z_]+"/);
    const edges = [...dot.matchAll(/^\s*"([^"]+)" -> "([^"]+)"(.*)$/gm)]
      .filter((m) => !m[3]!.includes('style=invis'))
      .map((m) => `${m[1]}->${m[2]}`);
    expect(edges.length).toBeGreaterThan(10);
    expect(new Set(edges).size).toBe(edges.length);
  }, 30_000);
});
