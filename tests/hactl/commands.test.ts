/** hactl commands on the in-process DCS with a scripted terminal (no servers: checks that refuse before any API call). */
import { afterEach, describe, expect, it } from 'vitest';
import { runEditConfig, runShowConfig } from '../../src/ctl/config-commands.ts';
import { catalogueOf } from '../../src/domain/pg-parameters.ts';
import { runHistory } from '../../src/ctl/history.ts';
import { runFlushSwitchover, runReinit, runRestart, selectMembers } from '../../src/ctl/member-actions.ts';
import { runPause } from '../../src/ctl/pause.ts';
import { runRemove } from '../../src/ctl/remove.ts';
import { runFailover, runSwitchover } from '../../src/ctl/switchover.ts';
import { InMemoryDcs, type InMemoryStore } from '../../src/dcs/memory.ts';
import { memberData, memorySession, threeNodeView } from './fixtures.ts';

const stores: InMemoryStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** A session on a store holding config, history and (optionally) members node1..3 with node1 leading. */
async function cluster(answers: Array<string | undefined> = [], opts: { members?: boolean; leader?: boolean } = {}) {
  const m = await memorySession(answers);
  stores.push(m.store);
  await m.other.initialize('7300000000000000001', { create: true });
  await m.other.setConfig({ ttl: 30, loop_wait: 10, retry_timeout: 10 });
  await m.other.setHistory([[1, 50331808, 'no recovery target specified', '2030-01-01T00:00:00+00:00', 'node2']]);
  if (opts.members !== false) {
    for (const [i, name] of ['node1', 'node2', 'node3'].entries()) {
      const d = new InMemoryDcs({ store: m.store, namespace: '/service/', scope: 'demo', name, ttlSeconds: 30, retryTimeoutMs: 1000 });
      await d.start({ watch: false });
      await d.touchMember(
        memberData(5432 + i, { role: i === 0 ? 'primary' : 'replica', ...(name === 'node3' ? { tags: { nofailover: true } } : {}) }),
      );
      if (i === 0 && opts.leader !== false) await d.attemptToAcquireLeader();
    }
  }
  return m;
}

describe('show-config, edit-config', () => {
  it('show-config prints YAML; edit-config shows the diff and writes after a yes', async () => {
    const { session, io } = await cluster(['y']);
    await runShowConfig(session);
    expect(io.lines).toEqual(['loop_wait: 10\nretry_timeout: 10\nttl: 30']);
    io.lines.length = 0;
    await runEditConfig(session, { set: ['ttl=40'], pg: [], force: false });
    expect(io.lines).toEqual([
      '--- before',
      '+++ after',
      '@@ -1,3 +1,3 @@',
      ' loop_wait: 10',
      ' retry_timeout: 10',
      '-ttl: 30',
      '+ttl: 40',
      'Configuration changed',
    ]);
    expect(io.questions).toEqual(['Apply these changes? [y/N]: ']);
    expect((await session.dcs.refresh()).config?.value['ttl']).toBe(40);
  });

  it('a concurrent change between the read and the write aborts', async () => {
    const { session, other } = await cluster();
    const ask = session.io.ask;
    session.io.ask = async (q) => {
      await other.setConfig({ ttl: 31, loop_wait: 10, retry_timeout: 10 });
      return ask(q).then(() => 'y');
    };
    await expect(runEditConfig(session, { set: ['ttl=40'], pg: [], force: false })).rejects.toThrow(
      'Config modification aborted due to concurrent changes',
    );
    expect((await session.dcs.refresh()).config?.value['ttl']).toBe(31);
  });

  it('refused, unchanged, invalid and a cluster without config', async () => {
    const { session, io } = await cluster(['n']);
    await expect(runEditConfig(session, { set: ['ttl=40'], pg: [], force: false })).rejects.toThrow(/Aborting edit-config/);
    await runEditConfig(session, { set: ['ttl=30'], pg: [], force: true });
    expect(io.lines.at(-1)).toBe('Not changed');
    await expect(runEditConfig(session, { set: ['loop_wait=40'], pg: [], force: true })).rejects.toThrow(
      /invalid configuration: .*loop_wait 40/,
    );
    await expect(runEditConfig(session, { set: [], pg: [], apply: 'a', replace: 'b', force: true })).rejects.toMatchObject({ exitCode: 2 });
    const empty = await memorySession();
    stores.push(empty.store);
    await expect(runShowConfig(empty.session)).rejects.toThrow('cluster "demo" has no config key in the DCS');
  });

  it('-p values the server would refuse are refused with the check PATCH /config makes, and nothing is written (issue 30)', async () => {
    const { session, io } = await cluster();
    const catalogue = async () =>
      catalogueOf([{ name: 'max_connections', vartype: 'integer', context: 'postmaster', unit: '', min: 1, max: 262143 }]);
    await expect(runEditConfig(session, { set: [], pg: ['max_connections=lots'], force: true, catalogue })).rejects.toThrow(
      /invalid configuration: database\.parameters\.max_connections: .*lots/,
    );
    await expect(runEditConfig(session, { set: [], pg: ['no_such_param=1'], force: true, catalogue })).rejects.toThrow(
      /database\.parameters\.no_such_param: unknown PostgreSQL parameter/,
    );
    expect(io.lines).not.toContain('Configuration changed');
    expect((await session.dcs.refresh()).config?.value['database']).toBeUndefined();
    await runEditConfig(session, { set: [], pg: ['max_connections=200'], force: true, catalogue });
    expect(io.lines.at(-1)).toBe('Configuration changed');
    // No catalogue here: written, and said.
    await runEditConfig(session, { set: [], pg: ['work_mem=8MB'], force: true, catalogue: async () => undefined });
    expect(io.errors.at(-1)).toMatch(/no PostgreSQL binaries here to check the parameters/);
  });

  it('no change, no $EDITOR and no terminal: a usage error, never a vi waiting for input (issue 30)', async () => {
    const { session } = await cluster();
    const saved = process.env['EDITOR'];
    delete process.env['EDITOR'];
    try {
      await expect(runEditConfig(session, { set: [], pg: [], force: true })).rejects.toMatchObject({
        exitCode: 2,
        message: expect.stringMatching(/no \$EDITOR, and no terminal/),
      });
    } finally {
      if (saved !== undefined) process.env['EDITOR'] = saved;
    }
  });
});

describe('history', () => {
  it('pretty and json', async () => {
    const { session, io } = await cluster();
    await runHistory(session, 'json');
    expect(JSON.parse(io.lines[0]!)).toEqual([
      { TL: 1, LSN: 50331808, Reason: 'no recovery target specified', Timestamp: '2030-01-01T00:00:00+00:00', 'New Leader': 'node2' },
    ]);
    io.lines.length = 0;
    await runHistory(session, 'pretty');
    expect(io.lines[1]).toBe('| TL | LSN      | Reason                       | Timestamp                 | New Leader |');
    expect(io.lines[3]).toBe('|  1 | 50331808 | no recovery target specified | 2030-01-01T00:00:00+00:00 | node2      |');
  });
});

describe('refusals before any API call', () => {
  it('switchover: no leader, wrong leader, unknown or nofailover candidate, own leader, declined prompt', async () => {
    const noLeader = await cluster([], { leader: false });
    await expect(runSwitchover(noLeader.session, { force: true })).rejects.toThrow('This cluster has no leader');
    const { session } = await cluster();
    await expect(runSwitchover(session, { leader: 'node2', force: true })).rejects.toThrow(
      'Member node2 is not the leader of cluster demo',
    );
    await expect(runSwitchover(session, { candidate: 'node3', force: true })).rejects.toThrow(
      'Member node3 does not exist in cluster demo or is tagged as nofailover',
    );
    await expect(runSwitchover(session, { candidate: 'node1', force: true })).rejects.toThrow(
      'Member node1 is already the leader of cluster demo',
    );
    const eof = await cluster([undefined]);
    await expect(runSwitchover(eof.session, { force: false })).rejects.toThrow('Aborting switchover');
    const no = await cluster(['', 'node2', 'now', 'no']);
    await expect(runSwitchover(no.session, { force: false })).rejects.toThrow('Aborting switchover');
    expect(no.io.questions).toEqual([
      'Primary [node1]: ',
      'Candidate ["node2"] []: ',
      'When should the switchover take place (e.g. 2030-01-01T14:30) [now]: ',
      'Are you sure you want to switchover cluster demo, demoting current leader node1? [y/N]: ',
    ]);
    expect(no.io.lines).toContain('Current cluster topology');
  });

  it('failover: a candidate is required and must be promotable', async () => {
    const { session } = await cluster(['']);
    await expect(runFailover(session, { force: false })).rejects.toThrow('Failover could be performed only to a specific candidate');
    await expect(runFailover(session, { candidate: 'ghost', force: true })).rejects.toThrow(
      'Member ghost does not exist in cluster demo or is tagged as nofailover',
    );
  });

  it('restart, reinit: unknown members, the leader, a declined confirmation, no pending restart', async () => {
    const { session, io } = await cluster(['n']);
    await expect(runRestart(session, { members: ['nodeX'], role: 'any', any: false, pending: false, force: true })).rejects.toThrow(
      'Member nodeX does not exist in cluster demo',
    );
    await expect(runRestart(session, { members: [], role: 'any', any: false, pending: false, force: false })).rejects.toThrow(
      'Aborting restart',
    );
    expect(io.questions).toEqual(['Are you sure you want to restart members node2, node3, node1? [y/N]: ']);
    await runRestart(session, { members: [], role: 'any', any: false, pending: true, force: true });
    expect(io.lines.slice(-1)).toEqual(['No member has a pending restart']);
    await expect(runReinit(session, { members: ['node1'], fromLeader: false, wait: false, force: true })).rejects.toThrow(
      'Member node1 is the leader of cluster demo and can not be reinitialized',
    );
    await expect(runReinit(session, { members: [], fromLeader: false, wait: false, force: true })).rejects.toMatchObject({ exitCode: 2 });
  });

  it('member selection by role: replicas first, the leader last', () => {
    const v = threeNodeView();
    expect(selectMembers(v, 'demo', []).map((m) => m.name)).toEqual(['node2', 'node3', 'node1']);
    expect(selectMembers(v, 'demo', [], 'leader').map((m) => m.name)).toEqual(['node1']);
    expect(selectMembers(v, 'demo', ['node1', 'node2'], 'replica').map((m) => m.name)).toEqual(['node2']);
    expect(() => selectMembers(v, 'demo', [], 'standby-leader')).toThrow('No standby-leader members found in cluster demo');
    expect(() => selectMembers({ members: [] }, 'demo', [])).toThrow('cluster "demo" has no members in the DCS (no such cluster?)');
  });

  it('pause/resume: already paused, not paused', async () => {
    const { session, other } = await cluster();
    await expect(runPause(session, false, { wait: false })).rejects.toThrow('Cluster is not paused');
    await other.setConfig({ ttl: 30, loop_wait: 10, retry_timeout: 10, pause: true });
    await expect(runPause(session, true, { wait: false })).rejects.toThrow('Cluster is already paused');
  });

  it('flush switchover without a plan', async () => {
    const { session, io } = await cluster();
    await runFlushSwitchover(session);
    expect(io.lines).toEqual(['No pending scheduled switchover']);
  });
});

describe('remove', () => {
  it('a wrong cluster name, a missing "Yes I am aware" or a wrong leader name deletes nothing', async () => {
    for (const answers of [['other'], ['demo', 'yes'], ['demo', 'Yes I am aware', 'node2'], [undefined]]) {
      const { session } = await cluster(answers);
      await expect(runRemove(session)).rejects.toThrow(/do not match|Yes I am aware|current leader/);
      expect((await session.dcs.refresh()).members).toHaveLength(3);
    }
  });

  it('the right answers delete every key', async () => {
    const { session, io } = await cluster(['demo', 'Yes I am aware', 'node1']);
    await runRemove(session);
    expect(io.lines.at(-1)).toBe('Cluster demo removed from the DCS');
    const v = await session.dcs.refresh();
    expect(v.members).toEqual([]);
    expect(v.config).toBeUndefined();
    expect(v.initialize).toBeUndefined();
  });
});
