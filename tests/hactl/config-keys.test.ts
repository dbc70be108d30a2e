/**
 * `hactl edit-config` and `hactl convert-config` with keys the agent does not read and the two
 * dialects (issues 32 and 26), on the in-process DCS with a scripted terminal.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runConvertConfig, runEditConfig } from '../../src/ctl/config-commands.ts';
import type { InMemoryStore } from '../../src/dcs/memory.ts';
import { memorySession } from './fixtures.ts';

const stores: InMemoryStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

async function withConfig(config: Record<string, unknown>, answers: Array<string | undefined> = []) {
  const m = await memorySession(answers);
  stores.push(m.store);
  await m.other.setConfig(config);
  const stored = async () => (await m.session.dcs.refresh()).config?.value;
  return { ...m, stored };
}

describe('edit-config: keys the agent does not read', () => {
  it('refuses one that -s adds, suggesting the closest known key; writes nothing', async () => {
    const { session, stored } = await withConfig({ ttl: 30, loop_wait: 10 });
    await expect(runEditConfig(session, { set: ['loop_wiat=5'], pg: [], force: true })).rejects.toThrow(
      'invalid configuration: loop_wiat: unknown key; did you mean loop_wait?',
    );
    await expect(runEditConfig(session, { set: ['primary_start_timeout=300'], pg: [], force: true })).rejects.toThrow(
      /invalid configuration: primary_start_timeout: not supported/,
    );
    expect(await stored()).toEqual({ ttl: 30, loop_wait: 10 });
  });

  it('keeps one already stored, and a tool key round-trips', async () => {
    const { session, stored } = await withConfig({ ttl: 30, written_by_an_old_tool: 1 });
    await runEditConfig(session, { set: ['ttl=40', 'x-my-tool.owner=ops'], pg: [], force: true });
    expect(await stored()).toEqual({ ttl: 40, written_by_an_old_tool: 1, 'x-my-tool': { owner: 'ops' } });
    await runEditConfig(session, { set: ['written_by_an_old_tool=null'], pg: [], force: true });
    expect(await stored()).toEqual({ ttl: 40, 'x-my-tool': { owner: 'ops' } });
  });

  it('--replace refuses a document holding nothing the agent reads, and one dropping synchronous_mode', async () => {
    const { session, stored } = await withConfig({ ttl: 30, synchronous_mode: true });
    const replace = (text: string) => runEditConfig(session, { set: [], pg: [], replace: '-', force: true, readStdin: async () => text });
    await expect(replace('x-tool: 1\n')).rejects.toThrow(/holds no setting the agent reads/);
    await expect(replace('ttl: 31\n')).rejects.toThrow(/synchronous_mode: left out, it would fall back to its default false/);
    await replace('ttl: 31\nsynchronous_mode: false\n');
    expect(await stored()).toEqual({ ttl: 31, synchronous_mode: false });
  });

  it('names the settings an edit lets fall back to their defaults', async () => {
    const { session, io } = await withConfig({ ttl: 30, loop_wait: 5 });
    await runEditConfig(session, { set: ['loop_wait=null'], pg: [], force: true });
    expect(io.lines).toContain('Falling back to their defaults: loop_wait: 5 -> 10');
  });
});

describe("a cluster in the reference's dialect", () => {
  const PATRONI = { ttl: 30, postgresql: { use_pg_rewind: true, parameters: { max_connections: 100 } } };

  it('edit-config -p and -s database.… write into the postgresql section', async () => {
    const { session, stored } = await withConfig(PATRONI);
    await runEditConfig(session, { set: ['database.use_db_rewind=false'], pg: ['work_mem=8MB'], force: true });
    expect(await stored()).toEqual({
      ttl: 30,
      postgresql: { use_pg_rewind: false, parameters: { max_connections: 100, work_mem: '8MB' } },
    });
  });

  it('convert-config native, then patroni: the same meaning, shown as a diff, asked for', async () => {
    const { session, stored, io } = await withConfig(PATRONI, ['y', 'y']);
    await runConvertConfig(session, 'native', false);
    expect(await stored()).toEqual({
      ttl: 30,
      database: { use_db_rewind: true, parameters: { max_connections: 100 }, remove_data_directory_on_rewind_failure: false },
    });
    expect(io.questions).toEqual(['Convert the configuration of cluster demo from the patroni to the native dialect? [y/N]: ']);
    expect(io.lines).toContain('-postgresql:');
    expect(io.lines.at(-1)).toBe('Configuration converted to the native dialect');
    await runConvertConfig(session, 'native', true);
    expect(io.lines.at(-1)).toBe('Already in the native dialect');
    await runConvertConfig(session, 'patroni', false);
    expect(await stored()).toEqual({
      ttl: 30,
      postgresql: { use_pg_rewind: true, parameters: { max_connections: 100 }, remove_data_directory_on_rewind_failure: false },
    });
  });

  it('convert-config declined writes nothing', async () => {
    const { session, stored } = await withConfig(PATRONI, ['n']);
    await expect(runConvertConfig(session, 'native', false)).rejects.toThrow('Aborting convert-config: configuration not changed');
    expect(await stored()).toEqual(PATRONI);
  });
});
