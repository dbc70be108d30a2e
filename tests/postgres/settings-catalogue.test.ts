import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkParameter } from '../../src/domain/pg-parameters.ts';
import {
  buildSettingsCatalogue,
  loadSettingsCatalogue,
  parseDescribeConfig,
  parseMajorVersion,
} from '../../src/postgres/settings-catalogue.ts';

/** Lines as PostgreSQL 15's `postgres --describe-config` prints them (tab-separated, 9 fields). */
const SAMPLE = [
  'max_connections\tpostmaster\tConnections and Authentication / Connection Settings\tINTEGER\t0\t1\t262143\tSets the maximum number of concurrent connections.\t',
  'shared_buffers\tpostmaster\tResource Usage / Memory\tINTEGER\t0\t16\t1073741823\tSets the number of shared memory buffers used by the server.\t',
  'fsync\tsighup\tWrite-Ahead Log / Settings\tBOOLEAN\tFALSE\t\t\tForces synchronization of updates to disk.\tThe server will use the fsync() system call.',
  "random_page_cost\tuser\tQuery Tuning / Planner Cost Constants\tREAL\t0\t0\t1.79769e+308\tSets the planner's estimate of the cost of a nonsequentially fetched disk page.\t",
  'wal_level\tpostmaster\tWrite-Ahead Log / Settings\tENUM\treplica\t\t\tSets the level of information written to the WAL.\t',
  'search_path\tuser\tClient Connection Defaults / Statement Behavior\tSTRING\t"$user", public\t\t\tSets the schema search order.\t',
  'IntervalStyle\tuser\tClient Connection Defaults / Locale and Formatting\tENUM\tpostgres\t\t\tSets the display format for interval values.\t',
  'some_future\tuser\tX\tCOMPLEX\t\t\t\tA vartype this parser does not know.\t',
  'truncated\tuser',
  '',
].join('\n');

describe('parseDescribeConfig', () => {
  it('reads name, context, vartype and the range of numbers; no units or enum values', () => {
    const s = parseDescribeConfig(SAMPLE);
    expect(s.map((x) => x.name)).toEqual([
      'max_connections',
      'shared_buffers',
      'fsync',
      'random_page_cost',
      'wal_level',
      'search_path',
      'IntervalStyle',
    ]);
    expect(s[0]).toEqual({ name: 'max_connections', vartype: 'integer', context: 'postmaster', min: 1, max: 262143 });
    expect(s[2]).toEqual({ name: 'fsync', vartype: 'bool', context: 'sighup' });
    expect(s[3]).toEqual({ name: 'random_page_cost', vartype: 'real', context: 'user', min: 0, max: 1.79769e308 });
    expect(s[4]).toEqual({ name: 'wal_level', vartype: 'enum', context: 'postmaster' });
  });
});

describe('parseMajorVersion', () => {
  it('reads the version of `postgres --version`', () => {
    expect(parseMajorVersion('postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n')).toEqual({ version: '15.18', major: 15 });
    expect(parseMajorVersion('postgres (PostgreSQL) 17beta1')).toEqual({ version: '17', major: 17 });
    expect(parseMajorVersion('something else')).toBeUndefined();
  });
});

describe('buildSettingsCatalogue', () => {
  it('adds PostgreSQL 15 units, enum values, hidden and internal parameters for major 15', () => {
    const c = buildSettingsCatalogue(parseDescribeConfig(SAMPLE), 15, '15.18');
    expect(c.version).toBe('15.18');
    expect(c.settings.get('max_connections')?.unit).toBe('');
    expect(c.settings.get('shared_buffers')?.unit).toBe('8kB');
    expect(c.settings.get('random_page_cost')?.unit).toBe('');
    expect(c.settings.get('wal_level')?.enumValues).toEqual(['minimal', 'replica', 'logical']);
    expect(c.settings.get('wal_level')?.enumAliases).toEqual(['archive', 'hot_standby']);
    expect(c.settings.get('intervalstyle')?.enumValues).toContain('iso_8601');
    expect(c.settings.get('application_name')).toEqual({ name: 'application_name', vartype: 'string', context: 'user' });
    expect(c.settings.get('transaction_isolation')?.enumValues).toContain('read committed');
    expect(c.settings.get('block_size')?.context).toBe('internal');
    expect(checkParameter('shared_buffers', '1GB', c)).toBeUndefined();
    expect(checkParameter('shared_buffers', '1', c)).toBe('1 × 8kB is outside the range 16..1073741823 × 8kB');
  });

  it('for another major: units by name where listed, else unknown; enum values not checked', () => {
    const c = buildSettingsCatalogue(parseDescribeConfig(SAMPLE), 16, '16.4');
    expect(c.settings.get('shared_buffers')?.unit).toBe('8kB');
    expect(c.settings.get('max_connections')?.unit).toBeUndefined();
    expect(c.settings.get('wal_level')?.enumValues).toBeUndefined();
    expect(checkParameter('wal_level', 'something_new', c)).toBeUndefined();
    expect(checkParameter('max_connections', 'lots', c)).toMatch(/^invalid value "lots"/);
  });
});

const BIN = '/usr/lib/postgresql/15/bin';
const HAVE_PG = existsSync(join(BIN, 'postgres'));

describe.skipIf(!HAVE_PG)(
  `loadSettingsCatalogue (real ${BIN}/postgres --describe-config; skipped when postgresql-15 is not installed)`,
  () => {
    it('reads the catalogue of the installed server', async () => {
      const c = await loadSettingsCatalogue(BIN);
      expect(c.version).toMatch(/^15\.\d+$/);
      expect(c.settings.size).toBeGreaterThan(300);
      expect(c.settings.get('max_connections')).toEqual({
        name: 'max_connections',
        vartype: 'integer',
        context: 'postmaster',
        unit: '',
        min: 1,
        max: 262143,
      });
      expect(c.settings.get('shared_buffers')).toMatchObject({
        vartype: 'integer',
        context: 'postmaster',
        unit: '8kB',
        min: 16,
        max: 1073741823,
      });
      expect(c.settings.get('work_mem')).toMatchObject({ vartype: 'integer', unit: 'kB', min: 64 });
      expect(c.settings.get('checkpoint_timeout')).toMatchObject({ vartype: 'integer', unit: 's', min: 30, max: 86400 });
      expect(c.settings.get('wal_level')).toMatchObject({ vartype: 'enum', context: 'postmaster' });
      expect([...(c.settings.get('wal_level')?.enumValues ?? [])].sort()).toEqual(['logical', 'minimal', 'replica']);
      expect(c.settings.get('fsync')).toMatchObject({ vartype: 'bool', context: 'sighup' });
      expect(c.settings.get('random_page_cost')).toMatchObject({ vartype: 'real', min: 0 });
      expect(c.settings.get('search_path')).toMatchObject({ vartype: 'string' });
      // Every enum of this server has its values, every number its unit ('' when none).
      for (const s of c.settings.values()) {
        if (s.vartype === 'enum') expect(s.enumValues, s.name).toBeDefined();
        if ((s.vartype === 'integer' || s.vartype === 'real') && s.context !== 'internal') expect(s.unit, s.name).toBeDefined();
      }
      expect(checkParameter('no_such_param', '1', c)).toBe('unknown PostgreSQL parameter');
      expect(checkParameter('max_connections', 'lots', c)).toBe('invalid value "lots" for integer parameter max_connections');
      expect(checkParameter('max_connections', 300000000, c)).toBe('300000000 is outside the range 1..262143');
    });

    it('runs as the PostgreSQL OS user as well', async () => {
      const c = await loadSettingsCatalogue(BIN, 'postgres');
      expect(c.settings.get('max_connections')?.max).toBe(262143);
    });
  },
);

describe('loadSettingsCatalogue without a server binary', () => {
  it('rejects naming the binary', async () => {
    await expect(loadSettingsCatalogue('/nonexistent/bin')).rejects.toThrow(/nonexistent\/bin\/postgres/);
  });
});
