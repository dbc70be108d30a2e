/**
 * The node API on a real 3-node cluster (real etcd, real PostgreSQL 15, one agent process per
 * node): health verdicts on the leader and a replica, lag and tag parameters, switchover
 * (immediate, scheduled, deleted), failover to a candidate, restart with conditions, scheduled
 * restart, reload, reinitialize, PATCH/PUT /config with pending_restart, pause.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';

let c: TestCluster;
let leader = '';
let replica = '';

beforeAll(async () => {
  c = await TestCluster.create({
    nodes: 3,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 3,
    tags: { node2: { zone: 'east' }, node3: { zone: 'west' } },
  });
  c.startAll();
  leader = await c.waitForLeader(60_000);
  await c.waitForStreaming(
    c.nodes.map((n) => n.name).filter((n) => n !== leader),
    60_000,
  );
  replica = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
  await c.psql(leader, 'create table w (x int)');
  for (const n of c.nodes) await waitFor(async () => (await c.get(n.name, '/readiness')).status === 200, 30_000, `${n.name} ready`);
});

afterAll(async () => {
  await c?.destroy();
});

async function req(name: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const r = await fetch(`http://127.0.0.1:${c.node(name).apiPort}${path}`, {
    method,
    ...(body !== undefined
      ? { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } }
      : {}),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: r.status, text: await r.text() };
}

async function writable(name: string): Promise<boolean> {
  return c.psql(name, 'insert into w values (1)', 2000).then(
    () => true,
    () => false,
  );
}

async function settle(): Promise<void> {
  leader = await c.waitForLeader(60_000);
  const others = c.nodes.map((n) => n.name).filter((n) => n !== leader);
  for (const o of others) {
    await waitFor(async () => (await c.get(o, '/readiness')).status === 200, 60_000, `${o} ready`).catch((e) => {
      throw new Error(`${String(e)}\n${c.logs()}`);
    });
  }
  replica = others[0]!;
}

describe('health checks on a real cluster', () => {
  it.each([
    ['/', 200, 503],
    ['/primary', 200, 503],
    ['/read-write', 200, 503],
    ['/leader', 200, 503],
    ['/standby-leader', 503, 503],
    ['/standby_leader', 503, 503],
    ['/replica', 503, 200],
    ['/read-only', 200, 200],
    ['/health', 200, 200],
    ['/liveness', 200, 200],
    ['/readiness', 200, 200],
    ['/async', 503, 200],
    ['/asynchronous', 503, 200],
    ['/sync', 503, 503],
    ['/synchronous', 503, 503],
    ['/read-only-sync', 200, 503],
    ['/quorum', 503, 503],
    ['/read-only-quorum', 200, 503],
  ])('%s: leader %i, replica %i', async (path, onLeader, onReplica) => {
    expect((await c.get(leader, path)).status).toBe(onLeader);
    expect((await c.get(replica, path)).status).toBe(onReplica);
    const head = await fetch(`http://127.0.0.1:${c.node(leader).apiPort}${path}`, { method: 'HEAD' });
    expect(head.status).toBe(onLeader);
    expect(await head.text()).toBe('');
  });

  it('lag and tag parameters on /replica', async () => {
    expect((await c.get(replica, '/replica?lag=16MB')).status).toBe(200);
    expect((await c.get(replica, '/replica?lag=abc')).status).toBe(400);
    expect((await c.get(replica, '/replica?replication_state=streaming')).status).toBe(200);
    // node2 (zone east) and node3 (zone west) carry a tag; node1 none.
    const tagged = c.nodes.map((n) => n.name).find((n) => n !== leader && n !== 'node1')!;
    const zone = tagged === 'node2' ? 'east' : 'west';
    expect((await c.get(tagged, `/replica?tag_zone=${zone}`)).status).toBe(200);
    expect((await c.get(tagged, '/replica?tag_zone=north')).status).toBe(503);
    expect((await c.get(replica, '/replica?tag_missing=x')).status).toBe(503);
    expect((await c.get(leader, '/primary?tag_zone=north')).status).toBe(200);
  });

  it('an unknown path is a JSON 404', async () => {
    const r = await c.get(leader, '/nope');
    expect(r.status).toBe(404);
    expect(r.json().error).toBeDefined();
  });

  it('/ha, /cluster, /history and /metrics describe the cluster', async () => {
    const ha = (await c.get(replica, '/ha')).json();
    expect(ha).toMatchObject({ state: 'running', role: 'replica', ha: { scope: 'e2e', name: replica } });
    expect(typeof ha.xlog.received_location).toBe('number');
    const cluster = (await c.get(replica, '/cluster')).json();
    expect(cluster.members.map((m: { name: string }) => m.name)).toEqual(['node1', 'node2', 'node3']);
    expect(cluster.members.find((m: { name: string }) => m.name === leader).role).toBe('leader');
    expect(Array.isArray((await c.get(leader, '/history')).json())).toBe(true);
    const metrics = (await c.get(leader, '/metrics')).body;
    expect(metrics).toMatch(/ha_primary\{scope="e2e",name="[^"]+"\} 1/);
  });
});

describe('switchover and failover on a real cluster', () => {
  it('an immediate switchover: the candidate becomes a writable primary, the old leader streams again', async () => {
    const old = leader;
    const cand = replica;
    const t0 = Date.now();
    const r = await req(old, 'POST', '/switchover', { leader: old, candidate: cand });
    expect(r.status).toBe(200);
    expect(r.text).toBe(`Successfully switched over to "${cand}"`);
    await waitFor(() => writable(cand), 10_000, `writes on ${cand}`);
    expect(Date.now() - t0).toBeLessThan(15_000);
    await waitFor(async () => (await c.get(old, '/replica')).status === 200, 60_000, `${old} streams again`);
    await settle();
    expect(leader).toBe(cand);
  });

  it('bad switchover bodies are refused and change nothing', async () => {
    expect((await req(leader, 'POST', '/switchover', '{not json')).status).toBe(400);
    expect((await req(leader, 'POST', '/switchover', { candidate: replica })).status).toBe(400);
    expect((await req(leader, 'POST', '/switchover', { leader: 'nobody', candidate: replica })).status).toBe(412);
    expect((await req(leader, 'POST', '/switchover', { leader, candidate: 'ghost' })).status).toBe(412);
    expect((await req(leader, 'POST', '/switchover', { leader, candidate: leader })).status).toBe(400);
    expect((await req(leader, 'POST', '/switchover', { leader, scheduled_at: '2020-01-01T00:00:00+00:00' })).status).toBe(422);
    expect((await req(leader, 'POST', '/switchover', { leader, scheduled_at: '2099-01-01T00:00:00' })).status).toBe(400);
    expect(await c.leader()).toBe(leader);
  });

  it('a scheduled switchover deleted first does not happen', async () => {
    const at = new Date(Date.now() + 60_000).toISOString();
    const r = await req(leader, 'POST', '/switchover', { leader, candidate: replica, scheduled_at: at });
    expect(r.status).toBe(202);
    // Every node shows it once the watch delivered the key (a few ms).
    const cluster = await waitFor(
      async () => {
        const d = (await c.get(replica, '/cluster')).json();
        return d?.scheduled_switchover ? d : undefined;
      },
      5_000,
      'scheduled_switchover in /cluster',
    );
    expect(cluster.scheduled_switchover).toMatchObject({ from: leader, to: replica });
    expect((await req(leader, 'POST', '/switchover', { leader, candidate: replica, scheduled_at: at })).status).toBe(409);
    expect((await req(leader, 'DELETE', '/switchover')).status).toBe(200);
    expect((await req(leader, 'DELETE', '/switchover')).status).toBe(404);
    await waitFor(async () => (await c.get(replica, '/cluster')).json()?.scheduled_switchover === undefined, 5_000, 'plan removed');
    expect(await c.leader()).toBe(leader);
  });

  it('a scheduled switchover fires at its time', async () => {
    const old = leader;
    const cand = replica;
    const atMs = Date.now() + 4000;
    const r = await req(old, 'POST', '/switchover', { leader: old, candidate: cand, scheduled_at: new Date(atMs).toISOString() });
    expect(r.status).toBe(202);
    const newLeader = await c.waitForLeader(30_000, old);
    expect(Date.now()).toBeGreaterThanOrEqual(atMs);
    expect(newLeader).toBe(cand);
    await settle();
  });

  it('a failover to a named candidate', async () => {
    const cand = c.nodes.map((n) => n.name).find((n) => n !== leader && n !== replica)!;
    const r = await req(leader, 'POST', '/failover', { candidate: cand });
    expect(r.status).toBe(200);
    expect(r.text).toContain(cand);
    await waitFor(() => writable(cand), 10_000, `writes on ${cand}`);
    await settle();
    expect(leader).toBe(cand);
  });
});

describe('restart, reload, reinitialize and config on a real cluster', () => {
  it('restart with conditions: role mismatch is refused, a matching role restarts', async () => {
    const before = (await c.get(replica, '/ha')).json().postmaster_start_time;
    const no = await req(replica, 'POST', '/restart', { role: 'primary' });
    expect(no.status).toBe(503);
    expect((await req(replica, 'POST', '/restart', { restart_pending: true })).status).toBe(503);
    expect((await req(replica, 'POST', '/restart', { database_version: '9.6' })).status).toBe(503);
    expect((await req(replica, 'POST', '/restart', { database_version: 'x' })).status).toBe(400);
    const yes = await req(replica, 'POST', '/restart', { role: 'replica', database_version: '99.0', timeout: '60s' });
    expect(yes.status).toBe(200);
    await waitFor(
      async () => {
        const d = (await c.get(replica, '/ha')).json();
        return d?.state === 'running' && d.postmaster_start_time !== before;
      },
      30_000,
      'restarted replica',
    );
  });

  it('PATCH /config of a restart-only parameter shows pending_restart on every node, a restart clears it', async () => {
    const r = await req(leader, 'PATCH', '/config', { database: { parameters: { max_connections: 123 } } });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).database.parameters.max_connections).toBe(123);
    for (const n of c.nodes) {
      await waitFor(async () => (await c.get(n.name, '/ha')).json()?.pending_restart === true, 20_000, `${n.name} pending_restart`);
    }
    const reason = (await c.get(replica, '/ha')).json().pending_restart_reason;
    expect(reason.max_connections).toMatchObject({ new_value: '123' });
    expect((await req(replica, 'POST', '/restart', { restart_pending: true })).status).toBe(200);
    await waitFor(async () => (await c.get(replica, '/ha')).json()?.pending_restart === undefined, 20_000, 'pending cleared');
  });

  it('PATCH /config with an unknown PostgreSQL parameter or a value PostgreSQL refuses: 400 naming it, nothing written', async () => {
    const before = await c.etcdGet('config');
    const unknown = await req(leader, 'PATCH', '/config', { database: { parameters: { no_such_param: '1' } } });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toMatch(/database\.parameters\.no_such_param/);
    const bad = await req(leader, 'PATCH', '/config', { database: { parameters: { max_connections: 'lots' } } });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/max_connections/);
    expect(await c.etcdGet('config')).toBe(before);
  });

  it('a PATCH with a conflicting timing is refused; PUT replaces the document', async () => {
    const bad = await req(leader, 'PATCH', '/config', { loop_wait: 20 });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/loop_wait 20/);
    const cur = (await c.get(leader, '/config')).json();
    const put = await req(leader, 'PUT', '/config', { ...cur, maximum_lag_on_failover: 2097152 });
    expect(put.status).toBe(200);
    expect((await c.get(replica, '/config')).json().maximum_lag_on_failover).toBe(2097152);
  });

  it('a scheduled restart runs at its time', async () => {
    const before = (await c.get(replica, '/ha')).json().postmaster_start_time;
    const at = new Date(Date.now() + 3000).toISOString();
    const r = await req(replica, 'POST', '/restart', { schedule: at });
    expect(r.status).toBe(202);
    expect((await req(replica, 'POST', '/restart', { schedule: at })).status).toBe(409);
    expect((await c.get(replica, '/ha')).json().scheduled_restart).toBeDefined();
    await waitFor(
      async () => {
        const d = (await c.get(replica, '/ha')).json();
        return d?.state === 'running' && d.postmaster_start_time !== before;
      },
      30_000,
      'scheduled restart done',
    );
    expect((await req(replica, 'DELETE', '/restart')).status).toBe(404);
  });

  it('POST /reload answers and keeps the node running', async () => {
    const r = await req(replica, 'POST', '/reload');
    expect(r.status).toBeLessThan(300);
    expect((await c.get(replica, '/health')).status).toBe(200);
  });

  it('reinitialize is refused on the leader and re-clones a replica', async () => {
    expect((await req(leader, 'POST', '/reinitialize', {})).status).toBe(503);
    const r = await req(replica, 'POST', '/reinitialize', { force: true });
    expect(r.status).toBe(200);
    await waitFor(async () => (await c.get(replica, '/replica')).status === 200, 60_000, 'reinitialized replica');
    await c.psql(leader, 'insert into w values (42)');
    await waitFor(
      async () => (await c.psql(replica, 'select count(*) from w where x = 42').catch(() => '')).trim() === '1',
      20_000,
      'data on the reinitialized replica',
    );
  });
});

describe('pause mode on a real cluster', () => {
  it('pause: ha_is_paused, no scheduling, a switchover needs a candidate; resume', async () => {
    expect((await req(leader, 'PATCH', '/config', { pause: true })).status).toBe(200);
    await waitFor(async () => (await c.get(replica, '/ha')).json()?.pause === true, 20_000, 'pause visible');
    // Each member applies the DCS config in its own next cycle: wait for the leader's too.
    await waitFor(
      async () => /ha_is_paused\{[^}]*\} 1/.test((await c.get(leader, '/metrics')).body),
      20_000,
      'ha_is_paused 1 on the leader',
    );
    expect((await req(leader, 'POST', '/switchover', { leader })).status).toBe(400);
    expect(
      (await req(leader, 'POST', '/switchover', { leader, candidate: replica, scheduled_at: new Date(Date.now() + 60_000).toISOString() }))
        .status,
    ).toBe(400);
    const old = leader;
    const cand = replica;
    const r = await req(old, 'POST', '/switchover', { leader: old, candidate: cand });
    expect(r.status).toBe(200);
    await waitFor(() => writable(cand), 15_000, `writes on ${cand}`);
    expect((await req(cand, 'PATCH', '/config', { pause: null })).status).toBe(200);
    await settle();
    expect(leader).toBe(cand);
  });
});

describe('dynamic timing on a real cluster', () => {
  /**
   * Lease keepalives the etcd server received from every agent during `ms` (its
   * grpc_server_msg_received_total for LeaseKeepAlive): each member sends one per HA cycle, the
   * leader one more with its lock renewal, so the count follows the loop period of the cluster.
   * (The agents journal nothing per idle cycle, issue 13, so the journal cannot count cycles.)
   */
  async function keepalivesIn(ms: number): Promise<number> {
    const count = async () => {
      const text = await (await fetch(`${c.etcd.url}/metrics`)).text();
      const m = /^grpc_server_msg_received_total\{[^}]*grpc_method="LeaseKeepAlive"[^}]*\} (\S+)$/m.exec(text);
      return Number(m?.[1] ?? NaN);
    };
    const start = await count();
    await new Promise((r) => setTimeout(r, ms));
    return (await count()) - start;
  }

  it('a PATCH of loop_wait changes the loop period', async () => {
    const before = await keepalivesIn(4100); // loop_wait 2: about 2 cycles of 3 members (+ the leader's renewals)
    expect((await req(leader, 'PATCH', '/config', { loop_wait: 1 })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2500));
    const after = await keepalivesIn(4100); // loop_wait 1: about 4 cycles
    expect(after, `keepalives in 4.1 s: ${before} at loop_wait 2, ${after} at loop_wait 1`).toBeGreaterThanOrEqual(1.5 * before);
    expect(after).toBeGreaterThanOrEqual(12); // ≥ 4 cycles of each of 3 members, give or take the window's edges
    expect((await req(leader, 'PATCH', '/config', { loop_wait: 2 })).status).toBe(200);
  });

  it('a PATCH of ttl re-grants the lease with the new TTL', async () => {
    expect((await req(leader, 'PATCH', '/config', { ttl: 12 })).status).toBe(200);
    const { run } = await import('../support/processes.ts');
    const env = { ...process.env, ETCDCTL_API: '3' };
    await waitFor(
      async () => {
        // Lease ids are int64: read them as text (JSON numbers would lose precision).
        const raw = await run('etcdctl', ['--endpoints', c.etcd.url, 'get', '-w', 'json', `/service/${c.scope}/members/${replica}`], {
          env,
        });
        const lease = /"lease":(\d+)/.exec(raw)?.[1];
        if (!lease) return false;
        const ttl = JSON.parse(
          await run('etcdctl', ['--endpoints', c.etcd.url, 'lease', 'timetolive', '-w', 'json', BigInt(lease).toString(16)], { env }),
        );
        return ttl['granted-ttl'] === 12;
      },
      20_000,
      'member key on a lease of TTL 12',
    );
    expect((await c.get(replica, '/ha')).json().state).toBe('running');
  });
});
