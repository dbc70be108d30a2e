/**
 * Callbacks (src/node/local/callbacks.ts): which transition fires which callback, real programs run with
 * `<action> <role> <scope>` (a tiny shell script appending its arguments to a file), the lanes
 * and the kill of a still-running call, the timeout, spawn failures, journal entries, the reload hook.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal } from '@ha/machines';
import {
  callbackFor,
  CallbackRunner,
  withReloadHook,
  type CallbackCommands,
  type CallbackSpawner,
  type DbPhase,
} from '../../../src/node/local/callbacks.ts';
import { systemClock } from '../../../src/node/clock.ts';
import { isAlive, waitFor } from '../../support/processes.ts';
import { makeTempDir, removeTempDir } from '../../support/tmp.ts';

const log = pino({ level: 'silent' });
let dir = '';
let record = '';
let out = '';
let slow = '';

beforeAll(async () => {
  dir = await makeTempDir('ha-callbacks-');
  out = join(dir, 'calls.txt');
  record = join(dir, 'record.sh');
  slow = join(dir, 'slow.sh');
  await writeFile(record, `#!/bin/sh\necho "$*" >> '${out}'\n`);
  // Records its PID, then sleeps in a child (the kill must reach the whole process group).
  await writeFile(slow, `#!/bin/sh\necho "$$ $*" >> '${join(dir, 'slow.txt')}'\nsleep 30\n`);
  await chmod(record, 0o755);
  await chmod(slow, 0o755);
});

afterAll(async () => {
  await removeTempDir(dir);
});

const lines = async (f: string) => (await readFile(f, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
const events = (j: Journal): Record<string, unknown>[] =>
  j
    .recent(1000)
    .reverse()
    .flatMap((e) => (e.kind === 'event' && String(e.event['type']).startsWith('ha.callback') ? [e.event] : []));

function runner(commands: CallbackCommands, extra: { spawn?: CallbackSpawner; timeoutMs?: number } = {}) {
  const journal = new Journal();
  return { journal, r: new CallbackRunner({ commands, scope: 'demo', journal, log, clock: systemClock, ...extra }) };
}

describe('callbackFor', () => {
  const p = (value: string, role = 'replica'): DbPhase => ({ value, role });
  it.each([
    ['start as replica, first ever', p('starting'), p('running'), undefined, { action: 'on_start', role: 'replica' }],
    [
      'start in the role last announced',
      p('starting', 'primary'),
      p('running', 'primary'),
      'primary',
      { action: 'on_start', role: 'primary' },
    ],
    [
      'bootstrap (initdb) → running primary',
      p('initdb', 'uninitialized'),
      p('running', 'primary'),
      undefined,
      { action: 'on_start', role: 'primary' },
    ],
    [
      'adopted at agent start (pg.found)',
      p('stopped', 'uninitialized'),
      p('running', 'primary'),
      undefined,
      { action: 'on_start', role: 'primary' },
    ],
    ['a demoted primary starts as a replica', p('starting'), p('running'), 'primary', { action: 'on_role_change', role: 'replica' }],
    ['promotion of a running replica', p('running'), p('running', 'primary'), 'replica', { action: 'on_role_change', role: 'primary' }],
    [
      'stop (demotion: the role it had)',
      p('stopping', 'primary'),
      p('stopped', 'replica'),
      'primary',
      { action: 'on_stop', role: 'primary' },
    ],
    ['stop before a re-clone', p('stopping'), p('creating_replica'), 'replica', { action: 'on_stop', role: 'replica' }],
    ['restart', p('restarting', 'primary'), p('running', 'primary'), 'primary', { action: 'on_restart', role: 'primary' }],
  ])('%s', (_n, prev, next, announced, expected) => {
    expect(callbackFor(prev, next, announced)).toEqual(expected);
  });
  it.each([
    ['a failed stop', p('stopping'), p('stop_failed')],
    ['a crash', p('running'), p('crashed')],
    ['a failed start', p('starting'), p('start_failed')],
    ['clone start', p('stopped'), p('creating_replica')],
  ])('nothing for %s', (_n, prev, next) => {
    expect(callbackFor(prev, next, 'replica')).toBeUndefined();
  });
});

describe('CallbackRunner with a real program', () => {
  it('runs `<program> <action> <role> <scope>` without waiting, and journals start and end', async () => {
    const { r, journal } = runner({ on_start: [record], on_role_change: [record, 'extra word'] });
    r.fire('on_start', 'replica');
    r.fire('on_stop', 'replica'); // not configured: nothing runs
    await waitFor(async () => ((await lines(out)).length >= 1 ? true : undefined), 5000, 'on_start recorded');
    await waitFor(async () => (events(journal).some((e) => e['type'] === 'ha.callback.exited') ? true : undefined), 5000, 'exit journaled');
    r.fire('on_role_change', 'primary');
    await waitFor(async () => ((await lines(out)).length >= 2 ? true : undefined), 5000, 'on_role_change recorded');
    expect(await lines(out)).toEqual(['on_start replica demo', 'extra word on_role_change primary demo']);
    const ev = events(journal);
    expect(ev[0]).toMatchObject({
      type: 'ha.callback.started',
      action: 'on_start',
      role: 'replica',
      command: `${record} on_start replica demo`,
    });
    expect(ev[1]).toMatchObject({ type: 'ha.callback.exited', action: 'on_start', code: 0 });
  });

  it('a new call kills the running one of its lane (process group included); on_reload has its own lane', async () => {
    const { r, journal } = runner({ on_stop: [slow], on_reload: [slow], on_role_change: [record] });
    const slowTxt = join(dir, 'slow.txt');
    r.fire('on_stop', 'primary');
    await waitFor(async () => ((await lines(slowTxt)).length >= 1 ? true : undefined), 5000, 'on_stop running');
    r.fire('on_reload', 'primary');
    await waitFor(async () => ((await lines(slowTxt)).length >= 2 ? true : undefined), 5000, 'on_reload running');
    const [stopPid, reloadPid] = (await lines(slowTxt)).map((l) => Number(l.split(' ')[0]));
    r.fire('on_role_change', 'replica');
    await waitFor(async () => (events(journal).some((e) => e['type'] === 'ha.callback.killed') ? true : undefined), 5000, 'kill journaled');
    expect(events(journal).find((e) => e['type'] === 'ha.callback.killed')).toMatchObject({
      action: 'on_stop',
      reason: 'callback on_stop killed: superseded by on_role_change',
    });
    await waitFor(async () => (!isAlive(stopPid!) ? true : undefined), 5000, 'on_stop gone');
    expect(isAlive(reloadPid!)).toBe(true); // other lane untouched
    r.fire('on_reload', 'replica'); // kills the previous on_reload
    await waitFor(async () => (!isAlive(reloadPid!) ? true : undefined), 5000, 'first on_reload gone');
    r.stopAll();
    await waitFor(
      async () => (events(journal).filter((e) => e['type'] === 'ha.callback.killed').length >= 3 ? true : undefined),
      5000,
      'all killed',
    );
  });

  it('a call running past the timeout is killed', async () => {
    const { r, journal } = runner({ on_restart: [slow] }, { timeoutMs: 300 });
    r.fire('on_restart', 'primary');
    await waitFor(async () => (events(journal).some((e) => e['type'] === 'ha.callback.killed') ? true : undefined), 5000, 'timeout kill');
    expect(events(journal).find((e) => e['type'] === 'ha.callback.killed')).toMatchObject({
      action: 'on_restart',
      reason: 'callback on_restart killed: timed out after 0.3 s',
    });
  });

  it('a program that cannot be started is journaled as failed; a non-zero exit as exited with its code', async () => {
    const { r, journal } = runner({ on_start: [join(dir, 'missing.sh')], on_stop: ['/bin/sh', '-c', 'exit 3', 'sh'] });
    r.fire('on_start', 'replica');
    await waitFor(async () => (events(journal).some((e) => e['type'] === 'ha.callback.failed') ? true : undefined), 5000, 'failure');
    expect(events(journal).find((e) => e['type'] === 'ha.callback.failed')?.['reason']).toMatch(
      /could not be started: spawn .*missing\.sh ENOENT/,
    );
    r.fire('on_stop', 'replica');
    await waitFor(async () => (events(journal).some((e) => e['type'] === 'ha.callback.exited') ? true : undefined), 5000, 'exit');
    expect(events(journal).find((e) => e['type'] === 'ha.callback.exited')).toMatchObject({
      code: 3,
      reason: 'callback on_stop ended with exit code 3',
    });
  });
});

describe('CallbackRunner.observe (injected spawner)', () => {
  it('a switchover on the old primary: on_start, on_stop primary, on_role_change replica; on the new one: on_role_change primary', () => {
    const calls: string[] = [];
    const spawn: CallbackSpawner = (argv) => {
      calls.push(argv.slice(1).join(' '));
      return { pid: undefined, kill() {}, exited: Promise.resolve({ code: 0, signal: null }) };
    };
    const all: CallbackCommands = { on_start: ['x'], on_stop: ['x'], on_restart: ['x'], on_reload: ['x'], on_role_change: ['x'] };
    const { r: old } = runner(all, { spawn });
    for (const [value, role] of [
      ['stopped', 'uninitialized'],
      ['initdb', 'uninitialized'],
      ['running', 'primary'],
      ['restarting', 'primary'],
      ['running', 'primary'],
      ['stopping', 'primary'],
      ['stopped', 'replica'],
      ['starting', 'replica'],
      ['running', 'replica'],
    ] as const) {
      old.observe({ value, role });
    }
    old.reloaded();
    expect(calls).toEqual([
      'on_start primary demo',
      'on_restart primary demo',
      'on_stop primary demo',
      'on_role_change replica demo',
      'on_reload replica demo',
    ]);
    calls.length = 0;
    const { r: next } = runner(all, { spawn });
    for (const [value, role] of [
      ['stopped', 'uninitialized'],
      ['creating_replica', 'uninitialized'],
      ['starting', 'uninitialized'],
      ['running', 'replica'],
      ['running', 'primary'],
    ] as const) {
      next.observe({ value, role });
    }
    expect(calls).toEqual(['on_start replica demo', 'on_role_change primary demo']);
  });

  it('setCommands replaces the programs', () => {
    const calls: string[] = [];
    const spawn: CallbackSpawner = (argv) => {
      calls.push(argv.join(' '));
      return { pid: undefined, kill() {}, exited: Promise.resolve({ code: 0, signal: null }) };
    };
    const { r } = runner({}, { spawn });
    r.fire('on_start', 'replica');
    r.setCommands({ on_start: ['/new'] });
    r.fire('on_start', 'replica');
    expect(calls).toEqual(['/new on_start replica demo']);
  });
});

describe('withReloadHook', () => {
  it('calls the hook after a successful reload only, and passes everything else through bound', async () => {
    let reloads = 0;
    let hooks = 0;
    let fail = false;
    class FakePg {
      #secret = 42;
      async reload() {
        if (fail) throw new Error('reload failed');
        reloads++;
      }
      secret() {
        return this.#secret;
      }
    }
    const pg = withReloadHook(new FakePg(), () => hooks++);
    await pg.reload();
    fail = true;
    await expect(pg.reload()).rejects.toThrow('reload failed');
    expect([reloads, hooks]).toEqual([1, 1]);
    expect(pg.secret()).toBe(42);
  });
});
