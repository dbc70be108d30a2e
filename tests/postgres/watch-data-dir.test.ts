/**
 * LocalPostgres.watchDataDir (the crash watcher's data directory event, issue 13) on a real
 * directory: a change of its entries is reported, a change inside a subdirectory is not (pg_wal
 * and base/ change with every write), and removing the directory ends the watch.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalPostgres } from '../../src/postgres/local.ts';
import { waitFor } from '../support/processes.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

describe('LocalPostgres.watchDataDir', () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await removeTempDir(dir);
    dir = '';
  });

  async function setup() {
    dir = await makeTempDir('ha-watch-dir-');
    const dataDir = join(dir, 'data');
    mkdirSync(join(dataDir, 'pg_wal'), { recursive: true });
    writeFileSync(join(dataDir, 'PG_VERSION'), '15\n');
    const pg = new LocalPostgres({
      name: 'n1',
      scope: 's',
      dataDir,
      binDir: '/usr/lib/postgresql/15/bin',
      listen: { host: '127.0.0.1', port: 1 },
      socketDir: dir,
      superuser: { username: 'postgres', password: 'x' },
      replication: { username: 'replicator', password: 'x' },
      pgHba: [],
    });
    const events: boolean[] = [];
    const close = pg.watchDataDir((ended) => events.push(ended));
    return { dataDir, events, close };
  }

  it('reports a removed entry, not a change in a subdirectory', async () => {
    const { dataDir, events, close } = await setup();
    writeFileSync(join(dataDir, 'pg_wal', '000000010000000000000001'), 'x');
    await new Promise((r) => setTimeout(r, 100));
    expect(events).toEqual([]);
    rmSync(join(dataDir, 'PG_VERSION'));
    await waitFor(() => events.length > 0, 2000, 'an event for PG_VERSION');
    expect(events[0]).toBe(false);
    close();
  });

  it('ends the watch (ended = true) when the directory is removed', async () => {
    const { dataDir, events, close } = await setup();
    rmSync(dataDir, { recursive: true, force: true });
    await waitFor(() => events.includes(true), 2000, 'the watch ended');
    expect(events.filter((e) => e)).toHaveLength(1);
    close();
  });
});
