/**
 * checkParameter against PostgreSQL itself: for each (name, value), a postgresql.conf holding that
 * one line, written as the agent writes it (numbers bare, strings quoted), is read by the real
 * server binary with `postgres -D <dir> -C port` (reads the configuration files exactly as at a
 * start, then exits; no data directory needed). The server accepting the file must coincide with
 * checkParameter answering undefined. Starts some 190 short processes, no server.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkParameter, type ParameterValue, type SettingsCatalogue } from '../../src/domain/pg-parameters.ts';
import { quoteConfValue } from '../../src/postgres/conf-files.ts';
import { chownToPg } from '../../src/postgres/os-user.ts';
import { runAsPg } from '../../src/postgres/run-as-pg.ts';
import { loadSettingsCatalogue } from '../../src/postgres/settings-catalogue.ts';
import { makeTempDir, removeTempDir } from '../support/tmp.ts';

const BIN = '/usr/lib/postgresql/15/bin';
const HAVE_PG = existsSync(join(BIN, 'postgres'));

const CASES: Array<[string, ParameterValue[]]> = [
  ['fsync', ['on', 'off', 'of', 'o', 'TR', 'tRuE', 'yes', 'y', 'n', 'NO', '1', '0', '2', '', ' on', 'onn', 'offf', 'truee', 1, 0, 2]],
  [
    'max_connections',
    [
      100,
      '100',
      ' 100 ',
      '0x10',
      '010',
      '08',
      '1.5e2',
      '2.5',
      '3.5',
      'lots',
      '5MB',
      300000000,
      0,
      -1,
      '1e10',
      '+5',
      '-0',
      '0x',
      '1e',
      '.5e1',
      1e21,
      '0x1e3',
      '0.4',
      '0.5',
      '1.5',
      true,
    ],
  ],
  [
    'shared_buffers',
    ['128MB', '1GB', '100kB', '1', '16', '15', '1.5MB', '128 MB', '128mb', '1TB', '8TB', '1B', '131072B', '128KB', '128MBs'],
  ],
  ['work_mem', ['4MB', 64, 63, '1.5kB', '0.5MB', '1xyz', '64kB', '2147483647kB', '2147483648kB', '3TB', '65535B', '65000B', '64 kB', '4s']],
  ['wal_keep_size', ['128MB', '1GB', '-1', '0.5GB', '1.5kB']],
  ['max_wal_size', ['1GB', '1MB', '1.5MB', '2MB']],
  ['log_temp_files', ['-1', '0', '10kB', '-2']],
  ['wal_buffers', ['-1', '16MB', '-2']],
  ['checkpoint_timeout', ['5min', '1500ms', '30s', 30, 29, '1d', '2d', '0.5min', '1h', '29999ms', '29500ms', '29501ms']],
  ['statement_timeout', ['-1', '1d', '1MB', '1.5min', '1us', '1500us', '2500us', '10s', -1, '1 s', '1sec', '1S', '1 min', '1 h']],
  ['log_rotation_age', ['1d', '1h', '90s', '30s', '31s', '1.5s']],
  ['vacuum_cost_delay', ['2ms', 2, 0.5, '1s', 200, 101, '2.5us', '0.1s', '100.0001']],
  ['old_snapshot_threshold', ['-1', '1h', '60d', '61d']],
  ['random_page_cost', ['1.1', 4, '-1', 'inf', 'nan', '1e400', '0x10', '1,5', ' 2 ', '1e-400', '.5', '5.', '.']],
  ['cursor_tuple_fraction', ['0.1', '2', '1']],
  ['wal_level', ['replica', 'logical', 'minimal', 'hot_standby', 'archive', 'REPLICA', 'bogus', '']],
  ['synchronous_commit', ['true', 'TRUE', 't', 'remote_apply', 'on', 1, 2]],
  ['huge_pages', ['try', 't', 'no']],
  ['log_min_messages', ['debug', 'info', 'fatal', 'debug6']],
  ['client_min_messages', ['fatal', 'debug', 'Info']],
  ['IntervalStyle', ['iso_8601', 'ISO_8601', 'iso']],
  ['default_transaction_isolation', ['read committed', 'READ COMMITTED', 'read_committed']],
  ['ssl_max_protocol_version', ['', 'TLSv1.3', 'tlsv1.2', 'TLSv1.4']],
  ['password_encryption', ['scram-sha-256', 'md5', 'on']],
  ['search_path', ['"$user", public', '', 42]],
  ['vacuum_cost_delay', ['0.1s', '1s']],
  ['application_name', ['x']],
  ['transaction_isolation', ['serializable', 'bogus']],
  ['force_parallel_mode', ['regress', 'yes', 'maybe']],
  ['no_such_param', ['1']],
  ['pg_stat_statements.max', ['lots']],
  ['Max_Connections', [5]],
  ['block_size', [8192]],
  ['server_version', ['1']],
  ['is_superuser', ['on']],
];

let root = '';
let catalogue: SettingsCatalogue;

beforeAll(async () => {
  if (!HAVE_PG) return;
  root = await makeTempDir('ha-pgparam-');
  catalogue = await loadSettingsCatalogue(BIN);
});
afterAll(async () => {
  if (root) await removeTempDir(root);
});

/** Whether the real server reads a postgresql.conf holding `name = value` without error, and its complaint. */
async function serverVerdict(dir: string, name: string, value: ParameterValue): Promise<{ ok: boolean; text: string }> {
  const rendered = typeof value === 'number' ? String(value) : quoteConfValue(typeof value === 'boolean' ? (value ? 'on' : 'off') : value);
  await writeFile(join(dir, 'postgresql.conf'), `${name} = ${rendered}\n`);
  await chownToPg(join(dir, 'postgresql.conf'));
  try {
    await runAsPg(join(BIN, 'postgres'), ['-D', dir, '-C', 'port'], { env: { LC_ALL: 'C' }, timeoutMs: 20_000 });
    return { ok: true, text: '' };
  } catch (e) {
    return { ok: false, text: String((e as Error).message) };
  }
}

describe.skipIf(!HAVE_PG)('checkParameter agrees with postgres reading postgresql.conf', () => {
  it('accepts exactly what PostgreSQL 15 accepts', async () => {
    const jobs = CASES.flatMap(([name, values]) => values.map((value) => ({ name, value })));
    const mismatches: string[] = [];
    let refused = 0;
    const workers = 4;
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        const dir = join(root, `w${w}`);
        await mkdir(dir, { mode: 0o700 });
        await chownToPg(dir);
        for (let i = w; i < jobs.length; i += workers) {
          const { name, value } = jobs[i]!;
          const ours = checkParameter(name, value, catalogue);
          const theirs = await serverVerdict(dir, name, value);
          if (!theirs.ok) refused++;
          if ((ours === undefined) !== theirs.ok) {
            mismatches.push(
              `${name}=${JSON.stringify(value)}: ours ${ours ?? 'accepted'}; postgres ${theirs.ok ? 'accepted' : theirs.text}`,
            );
          }
        }
      }),
    );
    expect(mismatches).toEqual([]);
    // Both verdicts are well represented (the oracle does discriminate).
    expect(refused).toBeGreaterThan(60);
    expect(jobs.length - refused).toBeGreaterThan(60);
  });
});
