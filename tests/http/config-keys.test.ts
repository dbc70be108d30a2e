/**
 * Issue 32: PATCH and PUT /config refuse keys the agent does not read (400 naming each, the
 * stored document unchanged), suggest the closest known key, keep tools' keys (x-…) and keys
 * already stored, refuse a PUT that holds nothing the agent reads or leaves out a setting whose
 * default is less safe, name the settings a PUT lets fall back to their defaults, keep the
 * stored dialect; /ha names the stored keys the agent does not read.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../src/domain/cluster.ts';
import { DEFAULTED_HEADER } from '../../src/http/config-routes.ts';
import { appFor, clusterView, FakeCommands, primaryLeader, send } from './fixtures.ts';

/** FakeCommands whose writes land in the view (compare-and-set on the revision, '0' = create-only). */
class StoringCommands extends FakeCommands {
  constructor(config: Record<string, unknown> | undefined) {
    super();
    const { config: _c, ...rest } = clusterView();
    this.cluster = config ? { ...rest, config: { value: structuredClone(config), revision: '11' } } : rest;
  }
  get view(): ClusterView {
    return this.cluster as ClusterView;
  }
  get stored(): Record<string, unknown> | undefined {
    return this.view.config?.value;
  }
  override async writeConfig(value: Record<string, unknown>, expectedRevision?: string): Promise<boolean> {
    await super.writeConfig(value, expectedRevision);
    const current = this.view.config?.revision ?? '0';
    if (expectedRevision !== undefined && expectedRevision !== current) return false;
    this.view.config = { value: structuredClone(value), revision: String(Number(current) + 1) };
    return true;
  }
}

/** The configuration of a settled cluster: timings, lag limit, the database section. */
const SETTLED = {
  ttl: 30,
  loop_wait: 5,
  retry_timeout: 10,
  maximum_lag_on_failover: 0,
  database: { use_db_rewind: true, parameters: { max_connections: 200 } },
};

/** Bodies of other endpoints sent to /config by mistake (issue 32's list), each naming its first key. */
const WRONG_BODIES: Array<[string, Record<string, unknown>]> = [
  ['candidate', { candidate: Array.from({ length: 1000 }, (_, i) => `m${i}`) }],
  ['force', { force: true }],
  ['from-leader', { 'from-leader': true }],
  ['restart_pending', { restart_pending: true }],
  ['database_version', { database_version: '15.4' }],
  ['scheduled_at', { scheduled_at: '2030-01-01T00:00:00Z' }],
  ['leader', { leader: 'pg-1', candidate: 'pg-2' }],
  ['timeout', { timeout: 30, schedule: '2030-01-01T00:00:00Z', role: 'primary' }],
];

describe('PATCH and PUT /config refuse the bodies of other endpoints', () => {
  it.each(WRONG_BODIES)('%s: 400 naming the key, the stored document unchanged', async (key, body) => {
    for (const method of ['PATCH', 'PUT'] as const) {
      const commands = new StoringCommands(SETTLED);
      const before = structuredClone(commands.stored);
      const { app } = appFor(primaryLeader(), commands);
      const res = await send(app, method, '/config', body);
      expect(res.status, method).toBe(400);
      const text = await res.text();
      expect(text, method).toMatch(new RegExp(`^invalid configuration: ${key}: unknown key`));
      for (const k of Object.keys(body)) expect(text, `${method} names ${k}`).toContain(`${k}: unknown key`);
      expect(commands.stored, method).toEqual(before);
      expect(commands.names(), method).not.toContain('writeConfig');
    }
  });

  it('suggests the closest known key for a one-letter typo, and writes nothing', async () => {
    const commands = new StoringCommands(SETTLED);
    const { app } = appFor(primaryLeader(), commands);
    const patch = await send(app, 'PATCH', '/config', { loop_wiat: 5 });
    expect(patch.status).toBe(400);
    expect(await patch.text()).toBe('invalid configuration: loop_wiat: unknown key; did you mean loop_wait?');
    const put = await send(app, 'PUT', '/config', { ...SETTLED, maximum_lag_on_failvoer: 0 });
    expect(put.status).toBe(400);
    expect(await put.text()).toBe('invalid configuration: maximum_lag_on_failvoer: unknown key; did you mean maximum_lag_on_failover?');
    const nested = await send(app, 'PATCH', '/config', { database: { use_db_rewnd: false } });
    expect(await nested.text()).toBe('invalid configuration: database.use_db_rewnd: unknown key; did you mean use_db_rewind?');
    expect(commands.stored).toEqual(SETTLED);
  });

  it("refuses the reference's settings that are not implemented, saying why", async () => {
    const commands = new StoringCommands(SETTLED);
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PATCH', '/config', { primary_start_timeout: 300, database: { recovery_conf: { restore_command: 'cp' } } });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      'invalid configuration: primary_start_timeout: not supported: a primary that fails to start releases the leader key at once (as primary_start_timeout 0); database.recovery_conf: not supported: the agent writes the recovery settings itself',
    );
    expect(commands.stored).toEqual(SETTLED);
  });
});

describe("tools' keys (x-…)", () => {
  it('round-trip: stored by PATCH and PUT, shown by GET, never read (not in /ha)', async () => {
    const commands = new StoringCommands(SETTLED);
    const { app } = appFor(primaryLeader(), commands);
    const tool = { vip: '10.0.0.100', owner: ['ops'] };
    const patched = await send(app, 'PATCH', '/config', { 'x-vip-manager': tool });
    expect(patched.status).toBe(200);
    expect(commands.stored).toEqual({ ...SETTLED, 'x-vip-manager': tool });

    const snapshot = primaryLeader({ cluster: commands.view });
    const shown = appFor(snapshot, commands).app;
    expect(await (await shown.request('/config')).json()).toEqual({ ...SETTLED, 'x-vip-manager': tool });
    expect(((await (await shown.request('/ha')).json()) as Record<string, unknown>)['config_ignored']).toBeUndefined();

    const put = await send(app, 'PUT', '/config', { ...SETTLED, 'x-vip-manager': { vip: '10.0.0.101' }, 'x-backup': 1 });
    expect(put.status).toBe(200);
    expect(commands.stored).toEqual({ ...SETTLED, 'x-vip-manager': { vip: '10.0.0.101' }, 'x-backup': 1 });
  });
});

describe('keys already stored that the agent does not read', () => {
  const LEGACY = { ...SETTLED, old_tool_setting: 'x', max_timelines_history: 10, database: { ...SETTLED.database, pg_ident: ['map a b'] } };

  it('are kept by a PATCH of something else and by a PUT that carries them unchanged; a PATCH null drops them', async () => {
    const commands = new StoringCommands(LEGACY);
    const { app } = appFor(primaryLeader(), commands);
    expect((await send(app, 'PATCH', '/config', { pause: true })).status).toBe(200);
    expect(commands.stored).toEqual({ ...LEGACY, pause: true });
    expect((await send(app, 'PUT', '/config', { ...LEGACY, pause: true, ttl: 40 })).status).toBe(200);
    expect(commands.stored).toEqual({ ...LEGACY, pause: true, ttl: 40 });
    const changed = await send(app, 'PUT', '/config', { ...LEGACY, pause: true, old_tool_setting: 'y' });
    expect(changed.status).toBe(400);
    expect(await changed.text()).toBe('invalid configuration: old_tool_setting: unknown key');
    expect((await send(app, 'PATCH', '/config', { old_tool_setting: null, max_timelines_history: null })).status).toBe(200);
    expect(commands.stored).toEqual({ ...LEGACY, pause: true, ttl: 40, old_tool_setting: undefined, max_timelines_history: undefined });
  });

  it('are named in /ha with why, and nothing else there changes', async () => {
    const cluster = clusterView({ config: { value: LEGACY, revision: '11' } });
    const { app } = appFor(primaryLeader({ cluster }));
    const ha = (await (await app.request('/ha')).json()) as Record<string, unknown>;
    expect(ha['config_ignored']).toEqual({
      old_tool_setting: 'unknown key',
      max_timelines_history: 'not supported: the history key keeps every entry',
      'database.pg_ident': 'not supported: the agent writes no pg_ident.conf',
    });
    expect(ha['role']).toBe('primary');
  });
});

describe('PUT /config replaces the whole document', () => {
  it('refuses a body holding nothing the agent reads', async () => {
    const commands = new StoringCommands(SETTLED);
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PUT', '/config', { 'x-tool': 1 });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('(root): holds no setting the agent reads');
    expect(commands.stored).toEqual(SETTLED);
  });

  it('names the settings it lets fall back to their defaults', async () => {
    const commands = new StoringCommands({ ...SETTLED, maximum_lag_on_failover: 5_000_000 });
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PUT', '/config', { ttl: 30, retry_timeout: 10 });
    expect(res.status).toBe(200);
    // database.use_db_rewind is left out too, but its default is the stored value: not named.
    expect(res.headers.get(DEFAULTED_HEADER)).toBe(
      'loop_wait: 5 -> 10; maximum_lag_on_failover: 5000000 -> 1048576; database.parameters: {"max_connections":200} -> {}',
    );
    expect(commands.stored).toEqual({ ttl: 30, retry_timeout: 10 });
  });

  it('refuses to leave out a setting whose default is less safe, and writes nothing', async () => {
    const commands = new StoringCommands({ ...SETTLED, synchronous_mode: true });
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PUT', '/config', { ttl: 30, loop_wait: 5, retry_timeout: 10, database: SETTLED.database });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain(
      'maximum_lag_on_failover: left out, it would fall back to its default 1048576: a replica further behind could be promoted',
    );
    expect(text).toContain(
      'synchronous_mode: left out, it would fall back to its default false: synchronous replication would be turned off',
    );
    expect(commands.stored).toEqual({ ...SETTLED, synchronous_mode: true });
  });
});

describe("a cluster in the reference's dialect keeps it", () => {
  const PATRONI = { ttl: 30, loop_wait: 10, retry_timeout: 10, postgresql: { use_pg_rewind: true, parameters: { max_connections: 100 } } };

  it('PATCH in either dialect is written in the stored one', async () => {
    const commands = new StoringCommands(PATRONI);
    const { app } = appFor(primaryLeader(), commands);
    expect((await send(app, 'PATCH', '/config', { database: { parameters: { work_mem: '8MB' } } })).status).toBe(200);
    expect((await send(app, 'PATCH', '/config', { postgresql: { use_pg_rewind: false } })).status).toBe(200);
    expect(commands.stored).toEqual({
      ...PATRONI,
      postgresql: { use_pg_rewind: false, parameters: { max_connections: 100, work_mem: '8MB' } },
    });
    const wrong = await send(app, 'PATCH', '/config', { postgresql: { use_db_rewind: true } });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toBe(
      "invalid configuration: postgresql.use_db_rewind: the native name: in this document's dialect (section postgresql) the key is use_pg_rewind",
    );
  });

  it('PUT of a native body is converted, meaning the same', async () => {
    const commands = new StoringCommands(PATRONI);
    const { app } = appFor(primaryLeader(), commands);
    const res = await send(app, 'PUT', '/config', {
      ttl: 30,
      loop_wait: 10,
      retry_timeout: 10,
      database: { parameters: { max_connections: 100 } },
    });
    expect(res.status).toBe(200);
    expect(commands.stored).toEqual({
      ...PATRONI,
      postgresql: { parameters: { max_connections: 100 }, use_pg_rewind: true, remove_data_directory_on_rewind_failure: true },
    });
  });
});
