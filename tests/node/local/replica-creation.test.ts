/**
 * Replica creation methods (docs/backups.md "Replica creation"; patroni.md §3.10): the plan
 * (src/domain/replica-methods.ts) and the creator (src/node/local/replica-creation.ts) over a
 * PostgreSQL control that records what it is asked: methods tried in order, a failure falling back
 * to the next with its reason journaled, `keep_data`, `no_leader`, the reference's arguments, and
 * database.recovery_conf written for replicas only (src/node/local/config-apply.ts).
 */
import { describe, expect, it } from 'vitest';
import { methodCommandLine, planMethods, resolveMethods, shellWord } from '../../../src/domain/replica-methods.ts';
import { withDefaults } from '../../../src/domain/dynamic-config.ts';
import { ConfigApplier } from '../../../src/node/local/config-apply.ts';
import { ReplicaCreationError, ReplicaCreator } from '../../../src/node/local/replica-creation.ts';
import { ReplicationSource } from '../../../src/node/replication/replication-source.ts';
import type { CommandOptions, ConfigureOptions, Upstream } from '../../../src/postgres/types.ts';
import { configApplierDeps } from '../fixtures.ts';

const LEADER: Upstream = { host: '10.0.0.1', port: 5432, name: 'node1' };

/** A data directory and the calls made on it; `fail` makes the named steps throw. */
function fakePg(fail: { basebackup?: string; command?: (line: string) => string | undefined; noData?: boolean } = {}) {
  const calls: string[] = [];
  let data = true;
  const pg = {
    dataDir: '/data/node2',
    hasData: async () => data,
    removeData: async () => {
      calls.push('removeData');
      data = false;
    },
    basebackup: async (from: Upstream) => {
      calls.push(`basebackup ${from.name}`);
      if (fail.basebackup) throw new Error(fail.basebackup);
      data = true;
    },
    runCommand: async (line: string, opts?: CommandOptions) => {
      calls.push(`run ${line}${opts?.replicationPassword ? ' (password)' : ''}`);
      const why = fail.command?.(line);
      if (why) throw new Error(why);
      if (!fail.noData) data = true;
    },
    sourceConninfo: (from: Upstream) => `host=${from.host} port=${from.port} user=replicator dbname=postgres`,
  };
  return { pg, calls };
}

function creator(
  pg: ReturnType<typeof fakePg>['pg'],
  list: string[],
  sections: Record<string, { command: string; [k: string]: unknown }> = {},
) {
  const notices: Array<[string, string]> = [];
  let t = 0;
  const c = new ReplicaCreator({
    scope: 'demo',
    pg,
    methods: () => ({ list, sections }),
    notice: (type, text) => notices.push([type, text]),
    now: () => (t += 1000),
    log: { info: () => undefined },
  });
  return { c, notices };
}

describe('replica creation methods: the plan', () => {
  it('keeps the order, resolves sections, and skips what cannot run without a source', () => {
    const { methods, missing } = resolveMethods(['pgbackrest', 'basebackup', 'ghost'], {
      pgbackrest: { command: 'pgbackrest restore', keep_data: true, no_leader: true, stanza: 'demo' },
    });
    expect(missing).toEqual(['ghost']);
    expect(methods.map((m) => m.name)).toEqual(['pgbackrest', 'basebackup']);
    expect(methods[0]).toMatchObject({ keepData: true, noLeader: true, noParams: false, args: { stanza: 'demo' } });
    expect(planMethods(methods, { hasSource: true }).tries.map((m) => m.name)).toEqual(['pgbackrest', 'basebackup']);
    const none = planMethods(methods, { hasSource: false, missing });
    expect(none.tries.map((m) => m.name)).toEqual(['pgbackrest']);
    expect(none.skipped.map((s) => s.name)).toEqual(['ghost', 'basebackup']);
    expect(planMethods(methods, { hasSource: true, basebackupOnly: true }).tries.map((m) => m.name)).toEqual(['basebackup']);
  });

  it("runs a method's command with the reference's arguments, shell-quoted, then its other keys", () => {
    const [m] = resolveMethods(['restore'], { restore: { command: '/usr/local/bin/restore.sh', set: 'latest' } }).methods;
    expect(methodCommandLine(m!, { scope: 'demo', dataDir: '/data/n 2', connstring: "host=a user='x'" })).toBe(
      `/usr/local/bin/restore.sh '--scope=demo' '--role=replica' '--datadir=/data/n 2' ${shellWord("--connstring=host=a user='x'")} '--set=latest'`,
    );
    const [bare] = resolveMethods(['restore'], { restore: { command: 'restore.sh', no_params: true, set: 1 } }).methods;
    expect(methodCommandLine(bare!, { scope: 'demo', dataDir: '/d' })).toBe(`restore.sh '--set=1'`);
  });
});

describe('ReplicaCreator', () => {
  it('falls back to the next method when one fails, with the reason journaled', async () => {
    const { pg, calls } = fakePg({ command: () => 'sh exited 1: ERROR: [075]: no backup set found to restore' });
    const { c, notices } = creator(pg, ['pgbackrest', 'basebackup'], {
      pgbackrest: { command: 'pgbackrest --stanza=demo --delta restore', keep_data: true },
    });
    await c.create({ from: LEADER });
    expect(calls).toEqual([
      `run pgbackrest --stanza=demo --delta restore '--scope=demo' '--role=replica' '--datadir=/data/node2' '--connstring=host=10.0.0.1 port=5432 user=replicator dbname=postgres' (password)`,
      'removeData',
      'basebackup node1',
    ]);
    expect(notices).toEqual([
      [
        'clone.methodFailed',
        'replica creation method pgbackrest failed after 1 s: sh exited 1: ERROR: [075]: no backup set found to restore; falling back to basebackup',
      ],
    ]);
  });

  it('keeps the data directory for a keep_data method and empties it for the others', async () => {
    const kept = fakePg();
    await creator(kept.pg, ['delta'], { delta: { command: 'restore', keep_data: true } }).c.create({ from: LEADER });
    expect(kept.calls.filter((x) => x === 'removeData')).toEqual([]);
    const emptied = fakePg();
    await creator(emptied.pg, ['full'], { full: { command: 'restore' } }).c.create({ from: LEADER });
    expect(emptied.calls[0]).toBe('removeData');
  });

  it('fails a method that exits 0 but leaves no cluster, and empties the directory when every method failed', async () => {
    const { pg, calls } = fakePg({ noData: true, basebackup: 'pg_basebackup: could not connect' });
    const { c, notices } = creator(pg, ['restore', 'basebackup'], { restore: { command: 'restore' } });
    const err = await c.create({ from: LEADER }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplicaCreationError);
    expect(String(err)).toContain('every replica creation method failed: restore: restore exited 0 but left no cluster');
    expect(String(err)).toContain('basebackup: pg_basebackup: could not connect');
    expect(notices.map((n) => n[0])).toEqual(['clone.methodFailed', 'clone.methodFailed']);
    expect(calls.at(-1)).toBe('removeData');
  });

  it('without a source runs only no_leader methods, saying why the others were skipped', async () => {
    const { pg, calls } = fakePg();
    const { c, notices } = creator(pg, ['repo', 'basebackup'], { repo: { command: 'restore', no_leader: true, keep_data: true } });
    await c.create({ from: undefined });
    expect(calls).toEqual([`run restore '--scope=demo' '--role=replica' '--datadir=/data/node2' (password)`]);
    expect(notices).toEqual([['clone.methodSkipped', 'replica creation method basebackup skipped: no running member to copy from']]);
  });
});

describe('database.recovery_conf', () => {
  it('is written for a replica, not for the primary', () => {
    const written: ConfigureOptions[] = [];
    const state = {
      config: withDefaults({}),
      tags: {},
      localParameters: { work_mem: '8MB' },
      recoveryConf: { restore_command: 'pgbackrest --stanza=demo archive-get %f "%p"', recovery_min_apply_delay: 0 },
    };
    const applier = new ConfigApplier(
      configApplierDeps({
        state,
        pg: { configure: async (o) => void written.push(o), reload: async () => undefined },
        source: new ReplicationSource(),
      }),
    );
    expect(applier.configureOptions('replica').parameters).toMatchObject({
      work_mem: '8MB',
      restore_command: 'pgbackrest --stanza=demo archive-get %f "%p"',
      recovery_min_apply_delay: 0,
    });
    expect(applier.configureOptions('primary').parameters).not.toHaveProperty('restore_command');
    // POST /reload replaces it.
    applier.applyLocal({}, {}, { recoveryConf: {}, replicaMethods: { list: ['basebackup'], sections: {} } });
    expect(applier.configureOptions('replica').parameters).not.toHaveProperty('restore_command');
  });
});
