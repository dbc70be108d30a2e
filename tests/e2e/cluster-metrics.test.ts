/**
 * GET /metrics of real nodes: promtool finds no parse error (naming lint the seed's own names
 * cause, such as a counter without `_total`, is expected: exit 3), and a real Prometheus server
 * scrapes a node with up == 1 and finds the ha_* series.
 */
import { HA_METRICS } from '../../src/http/metrics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrometheus } from '../support/prometheus.ts';
import { promtoolCheckMetrics } from '../support/prometheus.ts';
import { waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';

let c: TestCluster;
let leader = '';
let replica = '';

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 2, ttl: 10, loopWait: 2, retryTimeout: 3 });
  c.startAll();
  leader = await c.waitForLeader(60_000);
  replica = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
  await c.waitForStreaming([replica], 60_000);
});

afterAll(async () => {
  await c?.destroy();
});

describe('ha replay', () => {
  it('rebuilds from the journal file the same machine states the node shows live', async () => {
    const { run } = await import('../support/processes.ts');
    const { join, resolve } = await import('node:path');
    const root = resolve(import.meta.dirname, '../..');
    await waitFor(async () => (await c.get(replica, '/readiness')).status === 200, 20_000, 'replica settled');
    const live = (await c.get(replica, '/machines')).json() as {
      machines: { name: string; state: string; context: Record<string, unknown> }[];
    };
    const out = await run(
      process.execPath,
      ['--import', 'tsx', join(root, 'src/cli/ha.ts'), 'replay', join(c.dir, replica, `${replica}.journal.jsonl`)],
      { cwd: root },
    );
    const replayed = new Map(
      out
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
    );
    for (const m of live.machines) {
      const line = replayed.get(m.name);
      expect(line, m.name).toBeDefined();
      expect(line!.split(' ')[0]).toBe(m.state);
    }
    const db = live.machines.find((m) => m.name === 'database')!;
    const ctx = JSON.parse(replayed.get('database')!.slice(replayed.get('database')!.indexOf(' ') + 1)) as Record<string, unknown>;
    expect(ctx['role']).toBe(db.context['role']);
    expect(ctx['reason']).toBe(db.context['reason']);
  });
});

describe('node /metrics', () => {
  it('has no promtool parse error on a leader and on a replica', async () => {
    for (const n of [leader, replica]) {
      const body = (await c.get(n, '/metrics')).body;
      const r = promtoolCheckMetrics(body);
      expect([0, 3], r.output).toContain(r.code);
      // Lint only, and only about the seed's own counter names.
      for (const line of r.output.split('\n').filter((l) => l.trim()))
        expect(line).toMatch(/counter metrics should have "_total" suffix|^$/);
      expect(body).toMatch(new RegExp(`ha_database_state\\{scope="e2e",name="${n}"\\} 5`));
    }
  });

  it('is scraped by a real Prometheus with up == 1 and the ha_* series', async () => {
    const prom = await startPrometheus('ha', [`127.0.0.1:${c.node(leader).apiPort}`, `127.0.0.1:${c.node(replica).apiPort}`]);
    try {
      const up = await waitFor(
        async () => {
          const r = await prom.query('up{job="ha"} == 1');
          return r.length === 2 ? r : undefined;
        },
        30_000,
        'up == 1 for both nodes',
      );
      expect(up).toHaveLength(2);
      const primary = await waitFor(
        async () => {
          const r = await prom.query('ha_primary == 1');
          return r.length === 1 ? r : undefined;
        },
        30_000,
        'ha_primary',
      );
      expect(primary[0]!.metric['name']).toBe(leader);
      const names = await prom.query('count by (__name__) ({__name__=~"ha_.+", job="ha"})');
      // The seed's 26 and ours: every name of HA_METRICS (src/http/metrics.ts).
      expect(names.map((n) => n.metric['__name__']).sort()).toEqual(HA_METRICS.map(([name]) => name).sort());
    } finally {
      await prom.stop();
    }
  });
});
