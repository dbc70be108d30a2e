import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, waitFor } from 'xstate';
import { DATABASE_STATES, Journal, databaseMachine, replayMachine, startJournaledActor } from '@ha/machines';

/** Fake effects: each resolves (or rejects when listed in `fail`) and records its call. */
function fakes(fail: string[] = []) {
  const calls: string[] = [];
  const eff = (name: string) =>
    fromPromise(async ({ input }: { input: unknown }) => {
      calls.push(input && typeof input === 'object' ? `${name}:${Object.values(input).join(',')}` : name);
      if (fail.includes(name)) throw new Error(`${name} failed`);
    });
  const machine = databaseMachine.provide({
    actors: {
      initdb: eff('initdb'),
      customBootstrap: eff('customBootstrap'),
      clone: eff('clone'),
      start: eff('start'),
      stop: eff('stop'),
      restart: eff('restart'),
      promote: eff('promote'),
    } as never,
  });
  return { machine, calls };
}

const at = 1_700_000_000_000;

describe('database lifecycle machine', () => {
  it('has exactly the 15 states of the seed', () => {
    expect(Object.keys(databaseMachine.root.states).sort()).toEqual([...DATABASE_STATES].sort());
  });

  it('bootstraps a new cluster: stopped → initdb → running as primary', async () => {
    const { machine, calls } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    expect(a.getSnapshot().value).toBe('stopped');
    a.send({ type: 'cmd.bootstrap', reason: 'won the bootstrap race', at });
    expect(a.getSnapshot().value).toBe('initdb');
    await waitFor(a, (s) => s.value === 'running');
    expect(a.getSnapshot().context.role).toBe('primary');
    expect(calls).toEqual(['initdb']);
  });

  it('a failed initdb is the initdb_failed state, not a crash', async () => {
    const { machine } = fakes(['initdb']);
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'cmd.bootstrap', reason: 'won', at });
    await waitFor(a, (s) => s.value === 'initdb_failed');
    expect(a.getSnapshot().context.lastError).toBe('initdb failed');
  });

  it('clones a replica then starts it as a replica', async () => {
    const { machine, calls } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'cmd.clone', reason: 'leader exists', at });
    await waitFor(a, (s) => s.value === 'running');
    expect(a.getSnapshot().context.role).toBe('replica');
    expect(calls).toEqual(['clone:basebackup', 'start:replica']);
  });

  it('a failed start is start_failed; a failed clone leaves the node stopped', async () => {
    const s1 = fakes(['start']);
    const a = createActor(s1.machine, { input: { at } }).start();
    a.send({ type: 'cmd.start', role: 'replica', reason: 'x', at });
    await waitFor(a, (s) => s.value === 'start_failed');
    const s2 = fakes(['clone']);
    const b = createActor(s2.machine, { input: { at } }).start();
    b.send({ type: 'cmd.clone', reason: 'x', at });
    await waitFor(b, (s) => s.value === 'stopped' && s.context.lastError === 'clone failed');
  });

  it('notices a crash and restarts as primary', async () => {
    const { machine, calls } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'pg.found', role: 'primary', reason: 'postmaster running at agent start', at });
    expect(a.getSnapshot().value).toBe('running');
    a.send({ type: 'pg.died', reason: 'postmaster gone', at: at + 1 });
    expect(a.getSnapshot().value).toBe('crashed');
    a.send({ type: 'cmd.start', role: 'primary', reason: 'starting primary after failure', at: at + 2 });
    await waitFor(a, (s) => s.value === 'running');
    expect(a.getSnapshot().context.role).toBe('primary');
    expect(calls).toEqual(['start:primary']);
  });

  it('promotes a running replica without leaving running', async () => {
    const { machine } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'pg.found', role: 'replica', reason: 'x', at });
    a.send({ type: 'cmd.promote', reason: 'acquired the leader lock', at });
    expect(a.getSnapshot().value).toBe('running');
    await waitFor(a, (s) => s.context.role === 'primary');
  });

  it('demotes: stop, then stay stopped as a replica until the HA loop starts it (after its divergence check)', async () => {
    const { machine, calls } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'pg.found', role: 'primary', reason: 'x', at });
    a.send({ type: 'cmd.demote', mode: 'fast', reason: 'switchover', at });
    expect(a.getSnapshot().value).toBe('stopping');
    await waitFor(a, (s) => s.value === 'stopped');
    expect(a.getSnapshot().context.role).toBe('replica');
    expect(calls).toEqual(['stop:fast']);
    a.send({ type: 'cmd.start', role: 'replica', reason: 'starting as a secondary', at });
    await waitFor(a, (s) => s.value === 'running' && s.context.role === 'replica');
    expect(calls).toEqual(['stop:fast', 'start:replica']);
  });

  it('reinitializes: stop, clone, start', async () => {
    const { machine, calls } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'pg.found', role: 'replica', reason: 'x', at });
    a.send({ type: 'cmd.reinitialize', reason: 'api', at });
    await waitFor(a, (s) => s.value === 'running' && calls.length === 3);
    expect(calls).toEqual(['stop:fast', 'clone:basebackup', 'start:replica']);
  });

  it('rewinds in creating_replica (no state of its own), then starts as a replica', async () => {
    const { machine, calls } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'pg.found', role: 'primary', reason: 'x', at });
    a.send({ type: 'pg.died', reason: 'gone', at });
    expect(a.getSnapshot().value).toBe('crashed');
    a.send({ type: 'cmd.rewind', reason: 'running pg_rewind from n2', at });
    expect(a.getSnapshot().value).toBe('creating_replica');
    expect(a.getSnapshot().context.replicaMethod).toBe('rewind');
    await waitFor(a, (s) => s.value === 'running');
    expect(a.getSnapshot().context).toMatchObject({ role: 'replica', replicaMethod: 'basebackup' });
    expect(calls).toEqual(['clone:rewind', 'start:replica']);
  });

  it('a failed rewind leaves the data stopped (role replica, error kept); the next clone is a base backup', async () => {
    const { machine, calls } = fakes(['clone']);
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'cmd.rewind', reason: 'diverged', at });
    await waitFor(a, (s) => s.value === 'stopped' && s.context.lastError === 'clone failed');
    expect(a.getSnapshot().context).toMatchObject({ role: 'replica', replicaMethod: 'basebackup' });
    a.send({ type: 'cmd.reinitialize', reason: 'remove_data_directory_on_rewind_failure', at });
    await waitFor(a, (s) => s.value === 'stopped' && calls.length === 2);
    expect(calls).toEqual(['clone:rewind', 'clone:basebackup']);
  });

  it('ignores a promote on a primary and a bootstrap while running', () => {
    const { machine } = fakes();
    const a = createActor(machine, { input: { at } }).start();
    a.send({ type: 'pg.found', role: 'primary', reason: 'x', at });
    a.send({ type: 'cmd.promote', reason: 'x', at });
    a.send({ type: 'cmd.bootstrap', reason: 'x', at });
    expect(a.getSnapshot().value).toBe('running');
    expect(a.getSnapshot().context.promoting).toBe(false);
  });

  it('replaying the journal rebuilds the same state and context', async () => {
    const { machine } = fakes(['restart']);
    const journal = new Journal();
    const a = startJournaledActor(machine, { name: 'database', input: { at }, journal });
    a.send({ type: 'cmd.clone', reason: 'leader exists', at: at + 1 });
    await waitFor(a, (s) => s.value === 'running');
    a.send({ type: 'cmd.promote', reason: 'lock', at: at + 2 });
    await waitFor(a, (s) => s.context.role === 'primary');
    a.send({ type: 'cmd.restart', reason: 'api', at: at + 3 });
    await waitFor(a, (s) => s.value === 'restart_failed');
    a.send({ type: 'cmd.start', role: 'primary', reason: 'retry', at: at + 4 });
    await waitFor(a, (s) => s.value === 'running');
    a.send({ type: 'pg.died', reason: 'gone', at: at + 5 });

    const entries = [...journal.recent(1000)].reverse();
    const transitions = entries.filter((e) => e.kind === 'transition').map((e) => (e.kind === 'transition' ? `${e.from}>${e.to}` : ''));
    expect(transitions).toEqual([
      'stopped>creating_replica',
      'creating_replica>starting',
      'starting>running',
      'running>restarting',
      'restarting>restart_failed',
      'restart_failed>starting',
      'starting>running',
      'running>crashed',
    ]);
    const replayed = replayMachine(machine, 'database', JSON.parse(JSON.stringify(entries)));
    expect(replayed?.value).toBe(a.getSnapshot().value);
    expect(replayed?.context).toEqual(a.getSnapshot().context);
  });
});
