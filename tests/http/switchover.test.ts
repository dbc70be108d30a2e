import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { appFor, clusterView, config, FakeCommands, member, NOW, primaryLeader, send } from './fixtures.ts';

const FAST = { intervalMs: 5, timeoutMs: 2000 };

function withCluster(extra: Partial<ClusterView>): FakeCommands {
  const commands = new FakeCommands();
  commands.cluster = clusterView(extra);
  return commands;
}

async function post(path: string, body: unknown, opts: { snapshot?: NodeSnapshot; commands?: FakeCommands } = {}) {
  const { app, commands } = appFor(opts.snapshot ?? primaryLeader(), opts.commands ?? new FakeCommands(), FAST);
  const res = await send(app, 'POST', path, body);
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type'), commands };
}

const paused = () => primaryLeader({ config: config({ pause: true }) });
const syncOn = () => primaryLeader({ config: config({ synchronous_mode: true }) });
const unreachable = () => {
  const c = new FakeCommands();
  c.memberStatus.clear();
  return c;
};
const nofailover = () => {
  const c = new FakeCommands();
  c.memberStatus.set('http://10.0.0.2:8008/ha', { state: 'running', tags: { nofailover: true } });
  return c;
};

describe('POST /switchover and /failover: refusals (nothing written)', () => {
  it.each([
    ['/switchover', '{"leader": "pg-1",', undefined, undefined, 400, /^malformed JSON: /],
    ['/switchover', '', undefined, undefined, 400, /^request body must be a non-empty JSON object$/],
    ['/switchover', { leader: 'pg-1', candiate: 'pg-2' }, undefined, undefined, 400, /^Unknown field for the switchover: candiate$/],
    ['/switchover', { leader: 1 }, undefined, undefined, 400, /^leader must be a string$/],
    ['/switchover', { leader: 'pg-1', candidate: 'pg-2', member: 'pg-3' }, undefined, undefined, 400, /candidate and member/],
    ['/failover', { leader: 'pg-1' }, undefined, undefined, 400, /^Failover could be performed only to a specific candidate$/],
    ['/switchover', { candidate: 'pg-2' }, undefined, undefined, 400, /^Switchover could be performed only from a specific leader$/],
    ['/failover', { candidate: 'pg-2', scheduled_at: '2026-01-15T13:00:00Z' }, undefined, undefined, 400, /^Failover can't be scheduled$/],
    [
      '/switchover',
      { leader: 'pg-1', candidate: 'pg-2', scheduled_at: '2026-01-15T13:00:00Z' },
      paused,
      undefined,
      400,
      /^Can't schedule switchover in the paused state$/,
    ],
    [
      '/switchover',
      { leader: 'pg-1', scheduled_at: '2026-01-15T13:00:00' },
      undefined,
      undefined,
      400,
      /^Timezone information is mandatory for the scheduled switchover$/,
    ],
    [
      '/switchover',
      { leader: 'pg-1', scheduled_at: '2026-01-15T11:59:59Z' },
      undefined,
      undefined,
      422,
      /^Cannot schedule switchover in the past$/,
    ],
    [
      '/switchover',
      { leader: 'pg-1', scheduled_at: 'tomorrow' },
      undefined,
      undefined,
      422,
      /^Unable to parse scheduled timestamp\. It should be in an unambiguous format, e\.g\. ISO 8601$/,
    ],
    ['/switchover', { leader: 'pg-1' }, paused, undefined, 400, /^Switchover is possible only to a specific candidate in a paused state$/],
    ['/switchover', { leader: 'pg-1', candidate: 'pg-1' }, undefined, undefined, 400, /^Switchover target and source are the same$/],
    ['/failover', { leader: 'pg-1', member: 'pg-1' }, undefined, undefined, 400, /^Switchover target and source are the same$/],
    ['/switchover', { leader: 'pg-2', candidate: 'pg-3' }, undefined, undefined, 412, /^leader name does not match$/],
    [
      '/switchover',
      { leader: 'pg-1', candidate: 'pg-3' },
      syncOn,
      () => withCluster({ sync: { value: { leader: 'pg-1', sync_standby: 'pg-2' }, revision: '3' } }),
      412,
      /^candidate name does not match with sync_standby$/,
    ],
    ['/switchover', { leader: 'pg-1', candidate: 'pg-9' }, undefined, undefined, 412, /^candidate does not exists$/],
    ['/failover', { candidate: 'pg-9' }, undefined, undefined, 412, /^candidate does not exists$/],
    [
      '/switchover',
      { leader: 'pg-1' },
      syncOn,
      () => withCluster({ sync: { value: { leader: 'pg-1', sync_standby: null }, revision: '3' } }),
      412,
      /^switchover is not possible: can not find sync_standby$/,
    ],
    [
      '/switchover',
      { leader: 'pg-1' },
      undefined,
      () => withCluster({ members: [member('pg-1', { role: 'primary' })] }),
      412,
      /^switchover is not possible: cluster does not have members except leader$/,
    ],
    [
      '/switchover',
      { leader: 'pg-1', candidate: 'pg-2' },
      undefined,
      unreachable,
      412,
      /^switchover is not possible: no good candidates have been found$/,
    ],
    [
      '/switchover',
      { leader: 'pg-1', candidate: 'pg-2' },
      undefined,
      nofailover,
      412,
      /^switchover is not possible: no good candidates have been found$/,
    ],
    ['/switchover', { leader: 'pg-1' }, undefined, unreachable, 412, /^switchover is not possible: no good candidates have been found$/],
    ['/failover', { candidate: 'pg-2' }, undefined, unreachable, 412, /^failover is not possible: no good candidates have been found$/],
  ] as const)('POST %s %j → %i', async (path, body, snapshot, commands, status, text) => {
    const r = await post(path, body, {
      ...(snapshot ? { snapshot: snapshot() } : {}),
      ...(commands ? { commands: commands() } : {}),
    });
    expect(r.status).toBe(status);
    expect(r.type).toBe('text/plain; charset=utf-8');
    expect(r.text).toMatch(text);
    expect(r.commands.names()).not.toContain('writeFailover');
    expect(r.commands.names()).not.toContain('wake');
  });

  it('answers 503 when the DCS cannot be read', async () => {
    const commands = new FakeCommands();
    commands.cluster = new Error('etcd down');
    const r = await post('/switchover', { leader: 'pg-1', candidate: 'pg-2' }, { commands });
    expect(r.status).toBe(503);
    expect(r.text).toBe('DCS is not reachable: etcd down');
  });

  it('answers 503 when the failover key cannot be written', async () => {
    const commands = new FakeCommands();
    commands.writeFailoverResult = new Error('etcd down');
    const r = await post('/switchover', { leader: 'pg-1', candidate: 'pg-2' }, { commands });
    expect(r.status).toBe(503);
    expect(r.text).toBe('failed to write failover key into DCS');
    expect(commands.names()).not.toContain('wake');
  });

  it('checks the candidate through its API only (in parallel, all sync members when no candidate)', async () => {
    const commands = withCluster({ sync: { value: { leader: 'pg-1', sync_standby: 'pg-3' }, revision: '3' } });
    commands.memberStatus.clear();
    const r = await post('/switchover', { leader: 'pg-1' }, { snapshot: syncOn(), commands });
    expect(r.status).toBe(412);
    expect(commands.calls.filter((c) => c.method === 'fetchMemberStatus').map((c) => c.args[0])).toEqual(['http://10.0.0.3:8008/ha']);
  });
});

describe('POST /switchover with scheduled_at', () => {
  it('writes {leader, member, scheduled_at} create-only and answers 202 without member checks', async () => {
    const r = await post('/switchover', { leader: 'pg-1', member: 'pg-2', scheduled_at: '2026-01-15T14:30:00+02:00' });
    expect(r.status).toBe(202);
    expect(r.text).toBe('Switchover scheduled');
    const write = r.commands.calls.find((c) => c.method === 'writeFailover');
    expect(write?.args).toEqual([{ leader: 'pg-1', member: 'pg-2', scheduled_at: '2026-01-15T12:30:00+00:00' }, '0']);
    expect(r.commands.names()).not.toContain('fetchMemberStatus');
  });

  it('accepts a scheduled switchover without a candidate, CAS on the existing (empty) key', async () => {
    const commands = withCluster({ failover: { value: {}, revision: '77' } });
    const r = await post('/switchover', { leader: 'pg-1', scheduled_at: '2026-01-15T12:05:00Z' }, { commands });
    expect(r.status).toBe(202);
    expect(commands.calls.find((c) => c.method === 'writeFailover')?.args).toEqual([
      { leader: 'pg-1', scheduled_at: '2026-01-15T12:05:00+00:00' },
      '77',
    ]);
  });

  it('answers 409 when another switchover is already scheduled', async () => {
    const commands = withCluster({ failover: { value: { leader: 'pg-1', scheduled_at: '2026-01-15T13:00:00+00:00' }, revision: '8' } });
    const r = await post('/switchover', { leader: 'pg-1', scheduled_at: '2026-01-15T14:00:00Z' }, { commands });
    expect(r.status).toBe(409);
    expect(r.text).toBe('Another switchover is already scheduled');
    expect(commands.names()).not.toContain('writeFailover');
  });

  it('answers 409 when the compare-and-set loses', async () => {
    const commands = new FakeCommands();
    commands.writeFailoverResult = false;
    const r = await post('/switchover', { leader: 'pg-1', scheduled_at: '2026-01-15T14:00:00Z' }, { commands });
    expect(r.status).toBe(409);
    expect(r.text).toBe('failover key modified concurrently');
  });
});

describe('immediate switchover / failover: polling the snapshot', () => {
  /** A snapshot that moves through `steps` (one per poll after the write). */
  function moving(steps: Partial<ClusterView>[]) {
    let polls = -1;
    let written = false;
    const commands = new FakeCommands();
    commands.onWriteFailover = () => {
      written = true;
    };
    const snapshot = () => {
      if (!written) return primaryLeader();
      polls += 1;
      const step = steps[Math.min(polls, steps.length - 1)] ?? {};
      return primaryLeader({ cluster: clusterView(step) });
    };
    return { app: appFor(snapshot, commands, FAST).app, commands };
  }
  const lock = (name: string) => ({ leader: { name, leaseId: '9', revision: '99', createRevision: '99' } });
  const ours = (value: object) => ({ failover: { value, revision: '50' } });

  it('answers 200 when the candidate takes the lock', async () => {
    const { app, commands } = moving([{}, ours({ leader: 'pg-1', member: 'pg-2' }), lock('pg-2')]);
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('Successfully switched over to "pg-2"');
    expect(commands.names()).toEqual(['readCluster', 'fetchMemberStatus', 'writeFailover', 'wake']);
    expect(commands.calls[2]?.args).toEqual([{ leader: 'pg-1', member: 'pg-2' }, '0']); // create-only: one switchover in flight
  });

  it('one switchover in flight: a request finding one pending joins it and writes nothing', async () => {
    const { app, commands } = moving([ours({ leader: 'pg-1', member: 'pg-2' }), lock('pg-2')]);
    commands.cluster = clusterView({ failover: { value: { leader: 'pg-1', member: 'pg-2' }, revision: '50' } });
    // The join starts polling at once (nothing is written, so the fake snapshot never moves by itself).
    commands.onWriteFailover = undefined;
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1' });
    expect(commands.names()).not.toContain('writeFailover');
    expect([200, 503]).toContain(res.status);
  });

  it('one switchover in flight: a lost compare-and-set re-reads and joins the request that won', async () => {
    const { app, commands } = moving([{}, ours({ leader: 'pg-1', member: 'pg-3' }), lock('pg-3')]);
    commands.writeFailoverResult = false;
    let reads = 0;
    const base = clusterView();
    commands.readCluster = async () => {
      commands.calls.push({ method: 'readCluster', args: [] });
      reads += 1;
      return reads === 1 ? structuredClone(base) : clusterView({ failover: { value: { leader: 'pg-1', member: 'pg-3' }, revision: '51' } });
    };
    commands.onWriteFailover = undefined;
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1' });
    const writes = commands.calls.filter((c) => c.method === 'writeFailover');
    expect(writes).toHaveLength(1);
    expect(writes[0]?.args[1]).toBe('0');
    expect(commands.names().filter((n) => n === 'readCluster')).toHaveLength(2);
    expect([200, 503]).toContain(res.status);
  });

  it('names the winner when another member than the candidate took the lock', async () => {
    const { app } = moving([{}, lock('pg-3')]);
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('Switched over to "pg-3" instead of "pg-2"');
  });

  it('uses the failover wording for /failover', async () => {
    const { app } = moving([lock('pg-2')]);
    const res = await send(app, 'POST', '/failover', { candidate: 'pg-2' });
    expect(await res.text()).toBe('Successfully failed over to "pg-2"');
    const other = moving([lock('pg-3')]);
    const res2 = await send(other.app, 'POST', '/failover', { candidate: 'pg-2' });
    expect(await res2.text()).toBe('Failed over to "pg-3" instead of "pg-2"');
  });

  it('treats a failover naming the leader as a switchover', async () => {
    const { app } = moving([lock('pg-2')]);
    const res = await send(app, 'POST', '/failover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(await res.text()).toBe('Successfully switched over to "pg-2"');
  });

  it('answers 503 "Switchover failed" when the key is cleared while the old leader keeps the lock', async () => {
    const { app } = moving([{}, ours({ leader: 'pg-1', member: 'pg-2' }), ours({})]);
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('Switchover failed');
  });

  it('answers 503 with the reason the leader published for its refusal (switchover_refused in its member key)', async () => {
    const members = clusterView().members.map((m) =>
      m.name === 'pg-1'
        ? {
            ...m,
            data: {
              ...m.data,
              switchover_refused: {
                at: new Date(NOW).toISOString(),
                reason:
                  "switchover to pg-2 refused: pg-2 is on timeline 1, behind the cluster's 2 (it has not followed the current leader yet)",
              },
            },
          }
        : m,
    );
    const { app } = moving([{}, ours({ leader: 'pg-1', member: 'pg-2' }), ours({}), { failover: { value: {}, revision: '50' }, members }]);
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe(
      "Switchover failed: switchover to pg-2 refused: pg-2 is on timeline 1, behind the cluster's 2 (it has not followed the current leader yet)",
    );
  });

  it('a refusal published before the request is not its reason', async () => {
    const members = clusterView().members.map((m) =>
      m.name === 'pg-1'
        ? { ...m, data: { ...m.data, switchover_refused: { at: new Date(NOW - 60_000).toISOString(), reason: 'an old one' } } }
        : m,
    );
    const { app } = moving([{}, ours({ leader: 'pg-1', member: 'pg-2' }), { failover: { value: {}, revision: '50' }, members }]);
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(await res.text()).toBe('Switchover failed');
  });

  it('notices a clear that happened between two polls through the key revision', async () => {
    const { app } = moving([{}, { failover: { value: {}, revision: '51' } }]);
    const res = await send(app, 'POST', '/failover', { candidate: 'pg-2' });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('Failover failed');
  });

  it('answers 503 "status unknown" after the timeout when nothing moves', async () => {
    const commands = new FakeCommands();
    const { app } = appFor(primaryLeader(), commands, { intervalMs: 10, timeoutMs: 1000 });
    const res = await send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('Switchover status unknown after 1 seconds; operation may still be in progress');
  });

  describe('default timeout', () => {
    afterEach(() => {
      vi.useRealTimers();
    });
    it.each([
      [10, 20],
      [15, 30],
    ])('is 2 * max(10, loop_wait %i) = %i seconds', async (loopWait, seconds) => {
      vi.useFakeTimers();
      const { app } = appFor(primaryLeader({ config: config({ loop_wait: loopWait, ttl: 60 }) }));
      const pending = send(app, 'POST', '/switchover', { leader: 'pg-1', candidate: 'pg-2' });
      await vi.advanceTimersByTimeAsync(seconds * 1000 + 100);
      const res = await pending;
      expect(await res.text()).toBe(`Switchover status unknown after ${seconds} seconds; operation may still be in progress`);
    });
  });
});

describe('DELETE /switchover', () => {
  it('clears a scheduled switchover with compare-and-set and answers 200', async () => {
    const commands = withCluster({ failover: { value: { leader: 'pg-1', scheduled_at: '2026-01-15T13:00:00+00:00' }, revision: '8' } });
    const { app } = appFor(primaryLeader(), commands);
    const res = await app.request('/switchover', { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('scheduled switchover deleted');
    expect(commands.calls.filter((c) => c.method !== 'readCluster')).toEqual([
      { method: 'writeFailover', args: [{}, '8'] },
      { method: 'wake', args: [] },
    ]);
  });

  it('answers 404 when nothing is scheduled', async () => {
    const commands = withCluster({ failover: { value: { leader: 'pg-1', member: 'pg-2' }, revision: '8' } });
    const { app } = appFor(primaryLeader(), commands);
    const res = await app.request('/switchover', { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('no switchover is scheduled');
    expect(commands.names()).toEqual(['readCluster']);
  });

  it('answers 409 when the compare-and-set loses', async () => {
    const commands = withCluster({ failover: { value: { scheduled_at: '2026-01-15T13:00:00+00:00' }, revision: '8' } });
    commands.writeFailoverResult = false;
    const { app } = appFor(primaryLeader(), commands);
    const res = await app.request('/switchover', { method: 'DELETE' });
    expect(res.status).toBe(409);
  });
});
