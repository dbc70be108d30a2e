/**
 * Issue 32 (and the dialect part of issue 26) on a real 2-node cluster on etcd and PostgreSQL 15:
 * a dynamic configuration written straight into etcd with keys the agents do not read (an older
 * version's, another tool's, a typo) is reported (log, once per agent; /ha `config_ignored`),
 * not obeyed, not dropped, and the cluster keeps running on the settings it does read; the API
 * refuses adding such keys; a document in the reference's dialect (`postgresql: {parameters}`)
 * written into etcd is read. node1 runs from a file in the reference's dialect (`postgresql:`,
 * `bootstrap.dcs.postgresql.use_pg_rewind`), node2 from ours.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';

let c: TestCluster;
let leader = '';
let replica = '';

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 2, ttl: 10, loopWait: 2, retryTimeout: 3, dcsExtra: ['x-e2e: {written-by: config-keys.test.ts}'] });
  // node1's file in the reference's dialect.
  const file = c.node('node1').configPath;
  const text = await readFile(file, 'utf8');
  await writeFile(
    file,
    text
      .replace(/^database:$/m, 'postgresql:')
      .replace(/^ {4}retry_timeout: (\d+)$/m, '    retry_timeout: $1\n    postgresql: {use_pg_rewind: true}'),
  );
  c.startAll();
  try {
    leader = await c.settled(120_000);
    replica = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
  } catch (e) {
    throw new Error(`${String(e)}\n${c.logs()}`);
  }
});

afterAll(async () => {
  await c?.destroy();
});

/** Every agent's log lines (messages) containing `text`, per node. */
function logCount(text: string): Record<string, number> {
  return Object.fromEntries(c.nodes.map((n) => [n.name, n.output.split('\n').filter((l) => l.includes(text)).length]));
}

async function patchConfig(name: string, body: unknown): Promise<{ status: number; body: string }> {
  const n = c.node(name);
  const r = await fetch(`http://127.0.0.1:${n.apiPort}/config`, {
    method: 'PATCH',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: r.status, body: await r.text() };
}

describe("a member file in the reference's dialect", () => {
  it('runs its member in the cluster beside a member of ours', async () => {
    const text = await readFile(c.node('node1').configPath, 'utf8');
    expect(text).toMatch(/^postgresql:$/m);
    expect(text).toMatch(/^ {4}postgresql: \{use_pg_rewind: true\}$/m);
    for (const n of c.nodes) expect((await c.get(n.name, '/ha')).json()?.['state'], n.name).toBe('running');
    // The tool's key of bootstrap.dcs was seeded as it is.
    expect(JSON.parse((await c.etcdGet('config'))!)['x-e2e']).toEqual({ 'written-by': 'config-keys.test.ts' });
  });
});

describe('keys the agents do not read, written straight into etcd', () => {
  it('are reported once and in /ha, not obeyed, not dropped; the cluster keeps running on what it reads', async () => {
    const seeded = JSON.parse((await c.etcdGet('config'))!) as Record<string, unknown>;
    const written = {
      ...seeded,
      loop_wiat: 1,
      candidate: ['node9'],
      max_timelines_history: 5,
      'x-some-tool': { owner: 'ops' },
      database: { ...(seeded['database'] as Record<string, unknown>), pg_ident: ['map a b'], parameters: { work_mem: '7MB' } },
    };
    await c.etcdPut('config', JSON.stringify(written));

    for (const n of c.nodes) {
      const ignored = await waitFor(
        async () => (await c.get(n.name, '/ha')).json()?.['config_ignored'] as Record<string, string> | undefined,
        30_000,
        `config_ignored in ${n.name}'s /ha`,
      );
      expect(ignored).toEqual({
        loop_wiat: 'unknown key; did you mean loop_wait?',
        candidate: 'unknown key',
        max_timelines_history: 'not supported: the history key keeps every entry',
        'database.pg_ident': 'not supported: the agent writes no pg_ident.conf',
      });
    }
    // What the agents do read is applied: the leader's work_mem, through a reload.
    await waitFor(
      async () => ((await c.psql(leader, 'show work_mem')).trim() === '7MB' ? true : undefined),
      30_000,
      "the leader's work_mem 7MB",
    );
    // Several HA cycles later (loop_wait 2 s): still the same leader, the replica ready, and each
    // agent said it once, not every cycle.
    await new Promise((r) => setTimeout(r, 8000));
    expect(await c.settled(30_000)).toBe(leader);
    expect(logCount('ignored loop_wiat: unknown key; did you mean loop_wait?')).toEqual(
      Object.fromEntries(c.nodes.map((n) => [n.name, 1])),
    );
    // Not dropped: etcd still holds what was written.
    expect(JSON.parse((await c.etcdGet('config'))!)).toEqual(written);
  }, 120_000);

  it('a PATCH of another key keeps them; a PATCH adding one is refused with 400 and changes nothing', async () => {
    const before = JSON.parse((await c.etcdGet('config'))!) as Record<string, unknown>;
    const ok = await patchConfig(replica, { maximum_lag_on_failover: 2097152 });
    expect(ok.status, ok.body).toBe(200);
    const after = JSON.parse((await c.etcdGet('config'))!) as Record<string, unknown>;
    expect(after).toEqual({ ...before, maximum_lag_on_failover: 2097152 });

    const refused = await patchConfig(leader, { retry_timout: 5 });
    expect(refused.status).toBe(400);
    expect(refused.body).toBe('invalid configuration: retry_timout: unknown key; did you mean retry_timeout?');
    expect(JSON.parse((await c.etcdGet('config'))!)).toEqual(after);

    // The operator removes them; /ha then names none.
    const cleaned = await patchConfig(leader, {
      loop_wiat: null,
      candidate: null,
      max_timelines_history: null,
      database: { pg_ident: null },
    });
    expect(cleaned.status, cleaned.body).toBe(200);
    for (const n of c.nodes) {
      await waitFor(
        async () => ((await c.get(n.name, '/ha')).json()?.['config_ignored'] === undefined ? true : undefined),
        30_000,
        `no config_ignored in ${n.name}'s /ha`,
      );
    }
  }, 90_000);
});

describe("a document in the reference's dialect written into etcd", () => {
  it('is read: its postgresql.parameters reach PostgreSQL, nothing is reported, the cluster keeps its leader', async () => {
    const patroni = {
      ttl: 10,
      loop_wait: 2,
      retry_timeout: 3,
      maximum_lag_on_failover: 1048576,
      postgresql: { use_pg_rewind: true, use_slots: true, parameters: { work_mem: '9MB' } },
    };
    await c.etcdPut('config', JSON.stringify(patroni));
    await waitFor(
      async () => ((await c.psql(leader, 'show work_mem')).trim() === '9MB' ? true : undefined),
      30_000,
      "the leader's work_mem 9MB",
    );
    await waitFor(
      async () => ((await c.psql(replica, 'show work_mem')).trim() === '9MB' ? true : undefined),
      30_000,
      "the replica's work_mem 9MB",
    );
    for (const n of c.nodes) expect((await c.get(n.name, '/ha')).json()?.['config_ignored']).toBeUndefined();
    // A PATCH in our names lands in the reference's section: the cluster keeps its dialect.
    const r = await patchConfig(leader, { database: { parameters: { work_mem: '10MB' } } });
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse((await c.etcdGet('config'))!)).toEqual({
      ...patroni,
      postgresql: { ...patroni.postgresql, parameters: { work_mem: '10MB' } },
    });
    await waitFor(
      async () => ((await c.psql(leader, 'show work_mem')).trim() === '10MB' ? true : undefined),
      30_000,
      "the leader's work_mem 10MB",
    );
    expect(await c.settled(30_000)).toBe(leader);
  }, 120_000);
});
