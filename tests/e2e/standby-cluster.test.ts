/**
 * Standby cluster on real processes (docs/ha.md "Standby cluster"): two clusters on ONE etcd with
 * different scopes. Cluster A (scope e2e-main, one member) is a normal cluster; cluster B (scope
 * e2e-standby, two members) is bootstrapped with `standby_cluster` pointing at A's leader
 * host:port. Covers: B's bootstrap winner clones A (no initdb: same system identifier), its
 * leader is a standby leader (role standby_leader in /ha, /cluster and `hactl list`,
 * /standby-leader 200, /primary 503 on every member of B, /replica 503 on it), refuses writes,
 * rows written in A reach every member of B (B's replica cascades from the standby leader);
 * failover inside B (the standby leader's agent killed: the other member becomes standby leader,
 * no promotion); `hactl promote-cluster` refused on A; a DR switchover: `hactl demote-cluster` on
 * A (its primary stops and restarts as a standby leader streaming from B), then PATCH /config
 * {"standby_cluster": null} on B promotes it: writable, its replica and A follow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHactl } from '../hactl/run-hactl.ts';
import { waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';

let a: TestCluster;
let b: TestCluster;

const count = async (c: TestCluster, node: string): Promise<number> =>
  Number((await c.psql(node, 'select count(*) from dr').catch(() => '-1')).trim());

async function rowsEverywhere(c: TestCluster, n: number, timeoutMs = 60_000): Promise<void> {
  for (const node of c.nodes)
    await waitFor(async () => ((await count(c, node.name)) >= n ? true : undefined), timeoutMs, `${n} rows on ${node.name}`);
}

async function patchConfig(c: TestCluster, node: string, body: unknown): Promise<number> {
  const n = c.node(node);
  const r = await fetch(`http://127.0.0.1:${n.apiPort}/config`, {
    method: 'PATCH',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  await r.text();
  return r.status;
}

beforeAll(async () => {
  a = await TestCluster.create({ nodes: 1, scope: 'e2e-main', namePrefix: 'a' });
  a.startAll();
  await a.waitForLeader(90_000);
  await waitFor(async () => ((await a.get('a1', '/primary')).status === 200 ? true : undefined), 60_000, 'a1 primary');
  await a.psql('a1', "create table dr (id int primary key, v text); insert into dr values (1, 'before')");
  b = await TestCluster.create({
    nodes: 2,
    scope: 'e2e-standby',
    namePrefix: 'b',
    etcd: a.etcd,
    dcsExtra: [`standby_cluster: { host: 127.0.0.1, port: ${a.node('a1').pgPort} }`],
  });
  b.startAll();
}, 180_000);

afterAll(async () => {
  await b?.destroy();
  await a?.destroy();
}, 60_000);

describe('standby cluster', () => {
  let standbyLeader = '';

  it('bootstraps by cloning the remote: its leader is a standby leader, its replica follows it', async () => {
    standbyLeader = await b.waitForLeader(120_000);
    await waitFor(
      async () => ((await b.get(standbyLeader, '/standby-leader')).status === 200 ? true : undefined),
      120_000,
      'standby leader',
    );
    const ha = (await b.get(standbyLeader, '/ha')).json();
    expect(ha.role).toBe('standby_leader');
    // The same system identifier as the remote: cloned, not initdb'ed.
    const sysA = (await a.psql('a1', 'select system_identifier from pg_control_system()')).trim();
    const sysB = (await b.psql(standbyLeader, 'select system_identifier from pg_control_system()')).trim();
    expect(sysB).toBe(sysA);
    await rowsEverywhere(b, 1, 120_000);
  }, 240_000);

  it('health codes: /standby-leader 200 and /replica 503 on the standby leader, /primary 503 on every member', async () => {
    const replica = b.nodes.map((n) => n.name).find((n) => n !== standbyLeader)!;
    await b.waitForStreaming([replica], 60_000);
    expect((await b.get(standbyLeader, '/standby_leader')).status).toBe(200);
    expect((await b.get(standbyLeader, '/leader')).status).toBe(200);
    expect((await b.get(standbyLeader, '/replica')).status).toBe(503);
    for (const n of b.nodes) {
      expect((await b.get(n.name, '/primary')).status).toBe(503);
      expect((await b.get(n.name, '/')).status).toBe(503);
    }
    expect((await b.get(replica, '/standby-leader')).status).toBe(503);
    expect((await b.get(replica, '/replica')).status).toBe(200);
    // The replica cascades from the standby leader, which streams from the remote.
    const upstreamOfReplica = (
      await b.psql(standbyLeader, "select application_name from pg_stat_replication where state = 'streaming'")
    ).trim();
    expect(upstreamOfReplica).toBe(replica);
    const onRemote = (await a.psql('a1', "select application_name from pg_stat_replication where state = 'streaming'")).trim();
    expect(onRemote.split('\n')).toContain(standbyLeader);
    const cluster = (await b.get(replica, '/cluster')).json();
    expect(cluster.members.find((m: { name: string }) => m.name === standbyLeader).role).toBe('standby_leader');
    const list = await runHactl(['-c', b.node(replica).configPath, 'list']);
    expect(list.stdout).toMatch(new RegExp(`${standbyLeader}\\s*\\|[^\\n]*Standby Leader`));
  }, 120_000);

  it('the standby leader refuses writes; rows written in the first cluster reach every member', async () => {
    await expect(b.psql(standbyLeader, "insert into dr values (100, 'no')")).rejects.toThrow(/read-only/);
    await a.psql('a1', "insert into dr select g, 'from a' from generate_series(2, 50) g");
    await rowsEverywhere(b, 50);
  }, 120_000);

  it('hactl refuses promote-cluster on a cluster that is not a standby cluster, and demote-cluster on one that is', async () => {
    const p = await runHactl(['-c', a.node('a1').configPath, 'promote-cluster', '--force']);
    expect(p.code).not.toBe(0);
    expect(p.stderr).toContain('Cluster is not in standby mode');
    const d = await runHactl(['-c', b.node(standbyLeader).configPath, 'demote-cluster', '--host', '127.0.0.1', '--force']);
    expect(d.code).not.toBe(0);
    expect(d.stderr).toContain('Cluster is already in standby mode');
  }, 60_000);

  it('failover inside the standby cluster: the other member becomes standby leader, not a primary', async () => {
    const old = standbyLeader;
    await b.killAgent(old);
    const next = await b.waitForLeader(60_000, old);
    await waitFor(async () => ((await b.get(next, '/standby-leader')).status === 200 ? true : undefined), 60_000, 'new standby leader');
    expect((await b.get(next, '/primary')).status).toBe(503);
    await expect(b.psql(next, "insert into dr values (101, 'no')")).rejects.toThrow(/read-only/);
    await a.psql('a1', "insert into dr select g, 'after failover' from generate_series(51, 60) g");
    await waitFor(async () => ((await count(b, next)) >= 60 ? true : undefined), 60_000, 'rows on the new standby leader');
    standbyLeader = next;
    // The old member comes back as a replica of the new standby leader.
    b.start(old);
    await waitFor(
      async () => {
        const upstream = (
          await b.psql(next, "select application_name from pg_stat_replication where state = 'streaming'").catch(() => '')
        ).trim();
        return upstream.split('\n').includes(old) ? true : undefined;
      },
      90_000,
      `${old} streaming from ${next}`,
    );
    await rowsEverywhere(b, 60);
  }, 240_000);

  it('hactl demote-cluster on the first cluster: its primary becomes a standby leader replicating from the standby cluster', async () => {
    const r = await runHactl([
      '-c',
      a.node('a1').configPath,
      'demote-cluster',
      '--host',
      '127.0.0.1',
      '--port',
      String(b.node(standbyLeader).pgPort),
      '--force',
      '--wait',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Success: a1 runs as standby_leader');
    expect(await a.leader()).toBe('a1');
    expect((await a.get('a1', '/standby-leader')).status).toBe(200);
    expect((await a.get('a1', '/primary')).status).toBe(503);
    await expect(a.psql('a1', "insert into dr values (102, 'no')")).rejects.toThrow(/read-only/);
  }, 120_000);

  it('PATCH /config {"standby_cluster": null} promotes it: the standby leader becomes a writable primary, its replica (and the demoted cluster) follow', async () => {
    expect(await patchConfig(b, standbyLeader, { standby_cluster: { port: 70000 } })).toBe(400);
    expect(await patchConfig(b, standbyLeader, { standby_cluster: null })).toBe(200);
    await waitFor(async () => ((await b.get(standbyLeader, '/primary')).status === 200 ? true : undefined), 60_000, 'promoted');
    expect((await b.get(standbyLeader, '/ha')).json().role).toBe('primary');
    expect((await b.get(standbyLeader, '/standby-leader')).status).toBe(503);
    await b.psql(standbyLeader, "insert into dr values (1000, 'written in b')");
    const replica = b.nodes.map((n) => n.name).find((n) => n !== standbyLeader)!;
    await waitFor(
      async () => ((await b.psql(replica, 'select count(*) from dr where id = 1000').catch(() => '0')).trim() === '1' ? true : undefined),
      60_000,
      'the row on the replica',
    );
    // The first cluster, demoted before the promotion, follows the new timeline: the DR switchover is complete.
    await waitFor(
      async () => ((await a.psql('a1', 'select count(*) from dr where id = 1000').catch(() => '0')).trim() === '1' ? true : undefined),
      60_000,
      'the row on a1',
    );
  }, 180_000);
});
