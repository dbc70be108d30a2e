/**
 * Callbacks, cascading replication and the hactl verbs query/dsn/version on a real 3-node cluster
 * (etcd, PostgreSQL 15, one agent process per node). node3 is tagged `replicatefrom: node2`;
 * every node runs one script for all five callbacks, which appends `<node> <action> <role> <scope>`
 * to a file. Covers: callbacks at start and across a switchover (on_stop + on_role_change on the
 * old primary, on_role_change on the new one), node3 streaming from node2 (pg_stat_replication on
 * node2, its slot there and none on the leader, data reaching node3), `hactl topology` drawing it,
 * and `hactl query`, `dsn`, `version` run in a pseudo-terminal and plainly.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHactl, runHactlPty } from '../hactl/run-hactl.ts';
import { waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';
import { TestCluster } from './support/cluster.ts';

let c: TestCluster;
let cbDir = '';
let calls = '';
let cfg: string[] = [];

/** The recorded calls of one node, in order, without the node name. */
async function callsOf(node: string): Promise<string[]> {
  const text = await readFile(calls, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${node} `))
    .map((l) => l.slice(node.length + 1));
}

/** Waits until `node` recorded `line` (at or after index `from`); returns the node's calls. */
async function waitForCall(node: string, line: string, timeoutMs = 60_000): Promise<string[]> {
  return waitFor(
    async () => {
      const l = await callsOf(node);
      return l.includes(line) ? l : undefined;
    },
    timeoutMs,
    `${node} calling "${line}"`,
  );
}

/** application_name of the walsenders of a node that stream. */
async function streamingTo(node: string): Promise<string[]> {
  const out = await c.psql(node, "select application_name from pg_stat_replication where state = 'streaming' order by 1").catch(() => '');
  return out.split('\n').filter((l) => l !== '');
}

async function slotsOn(node: string): Promise<string[]> {
  return (await c.psql(node, "select slot_name || ':' || active from pg_replication_slots order by 1")).split('\n').filter((l) => l !== '');
}

beforeAll(async () => {
  cbDir = await makeTempDir('ha-e2e-callbacks-');
  calls = join(cbDir, 'calls.txt');
  await writeFile(join(cbDir, 'cb.sh'), `#!/bin/sh\necho "$*" >> '${calls}'\n`);
  await chmod(join(cbDir, 'cb.sh'), 0o755);
  c = await TestCluster.create({
    nodes: 3,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 3,
    tags: { node3: { replicatefrom: 'node2' } },
    callbacks: (node) =>
      Object.fromEntries(
        ['on_start', 'on_stop', 'on_restart', 'on_reload', 'on_role_change'].map((a) => [a, [join(cbDir, 'cb.sh'), node]]),
      ),
  });
  cfg = ['-c', c.node('node1').configPath];
  // node1 bootstraps alone, so node2 is a replica node3 can cascade from.
  c.start('node1');
  expect(await c.waitForLeader(60_000)).toBe('node1');
  c.start('node2');
  c.start('node3');
  await c.settled(120_000);
}, 180_000);

afterAll(async () => {
  await c?.destroy();
  if (cbDir) await removeTempDir(cbDir);
});

describe('callbacks and cascading replication', () => {
  it('node3 streams from node2 (replicatefrom), with its slot on node2 and none on the leader', async () => {
    await waitFor(async () => ((await streamingTo('node2')).includes('node3') ? true : undefined), 60_000, 'node2 streaming to node3');
    await waitFor(
      async () => ((await streamingTo('node1')).join(',') === 'node2' ? true : undefined),
      30_000,
      'node1 streaming to node2 only',
    );
    await waitFor(async () => ((await slotsOn('node2')).includes('node3:true') ? true : undefined), 30_000, 'slot node3 active on node2');
    await waitFor(async () => ((await slotsOn('node1')).join(',') === 'node2:true' ? true : undefined), 30_000, 'only slot node2 on node1');
    await c.psql('node1', 'create table cascade_t (id int); insert into cascade_t values (42)');
    await waitFor(
      async () => ((await c.psql('node3', 'select id from cascade_t').catch(() => '')).trim() === '42' ? true : undefined),
      30_000,
      'row on node3',
    );

    const ha3 = await waitFor(
      async () => {
        const d = (await c.get('node3', '/ha')).json();
        return d?.replication_state === 'streaming' ? d : undefined;
      },
      30_000,
      'node3 /ha replication_state streaming',
    );
    expect(ha3.replication_state).toBe('streaming');
    const topo = await runHactl([...cfg, 'topology', '-f', 'json']);
    expect(topo.code, topo.stderr).toBe(0);
    expect(JSON.parse(topo.stdout).map((r: Record<string, unknown>) => r['Member'])).toEqual(['node1', '+ node2', '  + node3']);
  });

  it('callbacks at start: on_start with the role, program words first', async () => {
    const n1 = await waitForCall('node1', 'on_start primary e2e');
    expect(n1[0]).toBe('on_start primary e2e');
    expect((await waitForCall('node2', 'on_start replica e2e'))[0]).toBe('on_start replica e2e');
    expect((await waitForCall('node3', 'on_start replica e2e'))[0]).toBe('on_start replica e2e');
    // node3 re-pointed at node2 after starting against the leader: a reload.
    await waitForCall('node3', 'on_reload replica e2e');
  });

  it('switchover node1 → node2: on_stop primary and on_role_change replica on node1, on_role_change primary on node2', async () => {
    const before = { node1: (await callsOf('node1')).length, node2: (await callsOf('node2')).length };
    const r = await c.post('node1', '/switchover', { leader: 'node1', candidate: 'node2' });
    expect(r.status, r.body).toBe(200);
    expect(await c.waitForLeader(60_000, 'node1')).toBe('node2');
    await c.settled(120_000);
    const n1 = (await waitForCall('node1', 'on_role_change replica e2e')).slice(before.node1);
    expect(n1.filter((l) => !l.startsWith('on_reload'))).toEqual(['on_stop primary e2e', 'on_role_change replica e2e']);
    const n2 = (await waitForCall('node2', 'on_role_change primary e2e')).slice(before.node2);
    expect(n2.filter((l) => !l.startsWith('on_reload'))).toEqual(['on_role_change primary e2e']);
    // node3's replicatefrom now names the leader: it streams from node2 directly, as node1 does.
    await waitFor(
      async () => ((await streamingTo('node2')).join(',') === 'node1,node3' ? true : undefined),
      60_000,
      'node2 streaming to node1 and node3',
    );
    const journal = await c.get('node1', '/events?limit=500');
    expect(journal.body).toContain('ha.callback.started');
  });
});

describe('hactl query, dsn, version', () => {
  it('query on the leader in a pty (pretty), on a replica by role, on a member by name; errors exit 1', async () => {
    const pty = await runHactlPty([...cfg, 'query', '-c', "select 42 as answer, 'x y' as t", '--format', 'pretty'], []);
    expect(pty.code, pty.output).toBe(0);
    expect(pty.output).toContain('| answer | t   |');
    expect(pty.output).toContain('| 42     | x y |');
    const rep = await runHactl([...cfg, 'query', '-r', 'replica', '-c', 'select pg_is_in_recovery() as r, current_user as u']);
    expect(rep.code, rep.stderr).toBe(0);
    expect(rep.stdout).toBe('r\tu\nt\tpostgres\n');
    const m3 = await runHactl([...cfg, 'query', '-m', 'node3', '--format', 'json', '-c', 'select 1 as a; select id from cascade_t']);
    expect(m3.code, m3.stderr).toBe(0);
    expect(JSON.parse(m3.stdout)).toEqual([{ id: '42' }]);
    const bad = await runHactl([...cfg, 'query', '-c', 'select * from missing_table']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^member node2: ERROR: relation "missing_table" does not exist \(SQLSTATE 42P01\)/);
    const usage = await runHactl([...cfg, 'query', '-m', 'node1', '-r', 'replica', '-c', 'select 1']);
    expect(usage.code).toBe(2);
  });

  it('dsn of the leader, of a replica, of a member', async () => {
    const leader = await runHactl([...cfg, 'dsn']);
    expect(leader.stdout).toBe(`host=127.0.0.1 port=${c.node('node2').pgPort}\n`);
    const m = await runHactlPty([...cfg, 'dsn', '-m', 'node3'], []);
    expect(m.output.trim()).toBe(`host=127.0.0.1 port=${c.node('node3').pgPort}`);
    const rep = await runHactl([...cfg, 'dsn', '-r', 'replica']);
    expect(rep.stdout).toBe(`host=127.0.0.1 port=${c.node('node1').pgPort}\n`);
  });

  it('version: hactl, each agent and PostgreSQL', async () => {
    const v = await runHactlPty([...cfg, 'version'], []);
    expect(v.code, v.output).toBe(0);
    const lines = v.output.trim().split('\n');
    expect(lines[0]).toMatch(/^hactl version \d+\.\d+\.\d+/);
    expect(lines.slice(2)).toEqual(
      ['node1', 'node2', 'node3'].map((n) => expect.stringMatching(new RegExp(`^${n}: ha \\d+\\.\\d+\\.\\d+\\S* PostgreSQL 15\\.\\d+$`))),
    );
    const alone = await runHactl(['version'], { env: { HACTL_CONFIG: '' } });
    expect(alone.code).toBe(0);
    expect(alone.stdout.trim().split('\n')).toHaveLength(1);
  });
});
