import { describe, expect, it } from 'vitest';
import { catalogueOf, checkParameter, checkParameters, filterParameters, parseBool } from '../../src/domain/pg-parameters.ts';

/** A small fixed catalogue, shaped as PostgreSQL 15 describes these parameters. */
const catalogue = catalogueOf(
  [
    { name: 'fsync', vartype: 'bool', context: 'sighup' },
    { name: 'max_connections', vartype: 'integer', context: 'postmaster', unit: '', min: 1, max: 262143 },
    { name: 'work_mem', vartype: 'integer', context: 'user', unit: 'kB', min: 64, max: 2147483647 },
    { name: 'statement_timeout', vartype: 'integer', context: 'user', unit: 'ms', min: 0, max: 2147483647 },
    { name: 'checkpoint_timeout', vartype: 'integer', context: 'sighup', unit: 's', min: 30, max: 86400 },
    { name: 'shared_buffers', vartype: 'integer', context: 'postmaster', unit: '8kB', min: 16, max: 1073741823 },
    { name: 'random_page_cost', vartype: 'real', context: 'user', unit: '', min: 0, max: 1.79769e308 },
    { name: 'vacuum_cost_delay', vartype: 'real', context: 'user', unit: 'ms', min: 0, max: 100 },
    {
      name: 'wal_level',
      vartype: 'enum',
      context: 'postmaster',
      enumValues: ['minimal', 'replica', 'logical'],
      enumAliases: ['archive', 'hot_standby'],
    },
    { name: 'IntervalStyle', vartype: 'enum', context: 'user', enumValues: ['postgres', 'iso_8601'] },
    { name: 'future_enum', vartype: 'enum', context: 'user' },
    { name: 'future_int', vartype: 'integer', context: 'user', min: 0, max: 100 },
    { name: 'search_path', vartype: 'string', context: 'user' },
    { name: 'block_size', vartype: 'integer', context: 'internal', unit: '', min: 8192, max: 8192 },
  ],
  '15.18',
);

const check = (name: string, value: string | number | boolean) => checkParameter(name, value, catalogue);

describe('checkParameter: names', () => {
  it('refuses a name the server does not know', () => {
    expect(check('no_such_param', '1')).toBe('unknown PostgreSQL parameter');
  });

  it('matches names case-insensitively', () => {
    expect(check('Max_Connections', 100)).toBeUndefined();
    expect(check('intervalstyle', 'iso_8601')).toBeUndefined();
    expect(check('MAX_CONNECTIONS', 'lots')).toBe('invalid value "lots" for integer parameter max_connections');
  });

  it('accepts custom (placeholder) names with a dot, without a value check', () => {
    expect(check('pg_stat_statements.max', 'lots')).toBeUndefined();
    expect(check('auto_explain.log_min_duration', '-1')).toBeUndefined();
    expect(check('a.b.c', true)).toBeUndefined();
  });

  it.each(['a..b', '.a', 'a.', 'max connections', '1abc', 'x-y', ''])('refuses the malformed name %j', (name) => {
    expect(check(name, '1')).toBe('invalid PostgreSQL parameter name');
  });

  it('refuses internal parameters', () => {
    expect(check('block_size', 8192)).toMatch(/^PostgreSQL parameter cannot be changed/);
  });
});

describe('checkParameter: bool', () => {
  it.each(['on', 'off', 'ON', 'Off', 'of', 'true', 'false', 'TRUE', 't', 'tr', 'f', 'fal', 'yes', 'y', 'YE', 'no', 'n', '1', '0'])(
    'accepts %j',
    (v) => {
      expect(check('fsync', v)).toBeUndefined();
    },
  );

  it.each(['o', 'onn', 'offf', 'truee', 'yess', '2', '01', '', ' on', 'on ', 'enabled'])('refuses %j', (v) => {
    expect(check('fsync', v)).toBe(
      `invalid value ${JSON.stringify(v)} for boolean parameter fsync (use on, off, true, false, yes, no, 1 or 0)`,
    );
  });

  it('takes JSON booleans and the numbers 1 and 0', () => {
    expect(check('fsync', true)).toBeUndefined();
    expect(check('fsync', false)).toBeUndefined();
    expect(check('fsync', 1)).toBeUndefined();
    expect(check('fsync', 0)).toBeUndefined();
    expect(check('fsync', 2)).toMatch(/^invalid value "2" for boolean parameter fsync/);
  });

  it('parseBool follows PostgreSQL parse_bool', () => {
    expect(parseBool('of')).toBe(false);
    expect(parseBool('Y')).toBe(true);
    expect(parseBool('o')).toBeUndefined();
  });
});

describe('checkParameter: integer', () => {
  it.each([100, '100', ' 100 ', '+5', '0x10', '010', '1.5e2', '2.5', '1e3', 1, 262143])('accepts %j for max_connections', (v) => {
    expect(check('max_connections', v)).toBeUndefined();
  });

  it('names the parameter and the type of a non-number', () => {
    expect(check('max_connections', 'lots')).toBe('invalid value "lots" for integer parameter max_connections');
    expect(check('max_connections', '08')).toBe('invalid value "08" for integer parameter max_connections (this parameter takes no unit)');
    expect(check('max_connections', '5MB')).toBe(
      'invalid value "5MB" for integer parameter max_connections (this parameter takes no unit)',
    );
    expect(check('max_connections', true)).toBe('invalid value "on" for integer parameter max_connections');
    expect(check('max_connections', '')).toBe('invalid value "" for integer parameter max_connections');
    expect(check('max_connections', '1e')).toMatch(/^invalid value "1e"/);
  });

  it('checks the range, in the parameter unit', () => {
    expect(check('max_connections', 300000000)).toBe('300000000 is outside the range 1..262143');
    expect(check('max_connections', 0)).toBe('0 is outside the range 1..262143');
    expect(check('max_connections', '0.4')).toBe('0.4 = 0 is outside the range 1..262143');
    expect(check('max_connections', '0.5')).toBe('0.5 = 0 is outside the range 1..262143'); // rounded half to even
    expect(check('max_connections', '1.5')).toBeUndefined(); // 2
  });

  it('refuses a value beyond the C int range', () => {
    expect(check('max_connections', 1e21)).toBe('invalid value "1e+21" for integer parameter max_connections (exceeds the integer range)');
    expect(check('work_mem', '3TB')).toBe('invalid value "3TB" for integer parameter work_mem (exceeds the integer range)');
  });

  it('converts memory units with base 1024 to kB', () => {
    expect(check('work_mem', '4MB')).toBeUndefined();
    expect(check('work_mem', '1GB')).toBeUndefined();
    expect(check('work_mem', '64kB')).toBeUndefined();
    expect(check('work_mem', '64 kB')).toBeUndefined();
    expect(check('work_mem', '65536B')).toBeUndefined();
    expect(check('work_mem', 64)).toBeUndefined();
    expect(check('work_mem', 63)).toBe('63 kB is outside the range 64..2147483647 kB');
    expect(check('work_mem', '65535B')).toBeUndefined(); // 63.999 kB rounds to 64
    expect(check('work_mem', '65000B')).toBe('65000B = 63 kB is outside the range 64..2147483647 kB');
  });

  it('refuses unknown or wrongly-cased memory units, listing the valid ones', () => {
    const hint = '(valid units: B, kB, MB, GB, TB)';
    expect(check('work_mem', '4mb')).toBe(`invalid value "4mb" for integer parameter work_mem ${hint}`);
    expect(check('work_mem', '4KB')).toBe(`invalid value "4KB" for integer parameter work_mem ${hint}`);
    expect(check('work_mem', '4MBs')).toBe(`invalid value "4MBs" for integer parameter work_mem ${hint}`);
    expect(check('work_mem', '1xyz')).toBe(`invalid value "1xyz" for integer parameter work_mem ${hint}`);
    expect(check('work_mem', '4s')).toBe(`invalid value "4s" for integer parameter work_mem ${hint}`);
  });

  it('converts to blocks of 8 kB, rounding a fraction to the next smaller unit then half to even', () => {
    expect(check('shared_buffers', '128MB')).toBeUndefined();
    expect(check('shared_buffers', '128kB')).toBeUndefined(); // 16 blocks
    expect(check('shared_buffers', '100kB')).toBe('100kB = 12 × 8kB is outside the range 16..1073741823 × 8kB'); // 12.5 → 12
    expect(check('shared_buffers', '1')).toBe('1 × 8kB is outside the range 16..1073741823 × 8kB');
    expect(check('shared_buffers', '8TB')).toBe('8TB = 1073741824 × 8kB is outside the range 16..1073741823 × 8kB');
  });

  it('converts time units (us, ms, s, min, h, d) to ms', () => {
    expect(check('statement_timeout', '1.5min')).toBeUndefined();
    expect(check('statement_timeout', '1h')).toBeUndefined();
    expect(check('statement_timeout', '1d')).toBeUndefined();
    expect(check('statement_timeout', '10 s')).toBeUndefined();
    expect(check('statement_timeout', '1500us')).toBeUndefined();
    expect(check('statement_timeout', '-1')).toBe('-1 ms is outside the range 0..2147483647 ms');
    const hint = '(valid units: us, ms, s, min, h, d)';
    expect(check('statement_timeout', '1sec')).toBe(`invalid value "1sec" for integer parameter statement_timeout ${hint}`);
    expect(check('statement_timeout', '1S')).toBe(`invalid value "1S" for integer parameter statement_timeout ${hint}`);
    expect(check('statement_timeout', '1MB')).toBe(`invalid value "1MB" for integer parameter statement_timeout ${hint}`);
  });

  it('converts time units to s, as PostgreSQL rounds', () => {
    expect(check('checkpoint_timeout', '5min')).toBeUndefined();
    expect(check('checkpoint_timeout', '0.5min')).toBeUndefined(); // 30 s
    expect(check('checkpoint_timeout', '1500ms')).toBe('1500ms = 2 s is outside the range 30..86400 s');
    expect(check('checkpoint_timeout', '29500ms')).toBeUndefined(); // 29.5 s rounds half to even: 30
    expect(check('checkpoint_timeout', '29499ms')).toBe('29499ms = 29 s is outside the range 30..86400 s');
    expect(check('checkpoint_timeout', '2d')).toBe('2d = 172800 s is outside the range 30..86400 s');
  });

  it('accepts any unit name without converting when the unit of the parameter is not known', () => {
    expect(check('future_int', '5MB')).toBeUndefined();
    expect(check('future_int', '500min')).toBeUndefined();
    expect(check('future_int', 50)).toBeUndefined();
    expect(check('future_int', 500)).toBe('500 is outside the range 0..100');
    expect(check('future_int', '5xyz')).toMatch(/^invalid value "5xyz" for integer parameter future_int/);
  });
});

describe('checkParameter: real', () => {
  it.each(['1.1', 4, '.5', '5.', ' 2 ', '1e3', '0x10', 0])('accepts %j for random_page_cost', (v) => {
    expect(check('random_page_cost', v)).toBeUndefined();
  });

  it('refuses non-numbers, NaN, overflow, units on a unitless parameter and values out of range', () => {
    expect(check('random_page_cost', 'fast')).toBe('invalid value "fast" for real parameter random_page_cost');
    expect(check('random_page_cost', 'nan')).toBe('invalid value "nan" for real parameter random_page_cost');
    expect(check('random_page_cost', '1e400')).toBe('invalid value "1e400" for real parameter random_page_cost');
    expect(check('random_page_cost', '1,5')).toBe('invalid value "1,5" for real parameter random_page_cost (this parameter takes no unit)');
    expect(check('random_page_cost', -1)).toBe('-1 is outside the range 0..1.79769e+308');
    expect(check('random_page_cost', 'inf')).toBe('inf = Infinity is outside the range 0..1.79769e+308');
  });

  it('converts units without rounding to an integer', () => {
    expect(check('vacuum_cost_delay', '2.5us')).toBeUndefined(); // 0.0025 ms
    expect(check('vacuum_cost_delay', '0.1s')).toBeUndefined(); // 100 ms
    expect(check('vacuum_cost_delay', 0.5)).toBeUndefined();
    expect(check('vacuum_cost_delay', '1s')).toBe('1s = 1000 ms is outside the range 0..100 ms');
    expect(check('vacuum_cost_delay', '100.0001')).toBe('100.0001 ms is outside the range 0..100 ms');
  });
});

describe('checkParameter: enum and string', () => {
  it('accepts listed values and aliases case-insensitively', () => {
    for (const v of ['replica', 'REPLICA', 'Logical', 'minimal', 'hot_standby', 'ARCHIVE']) expect(check('wal_level', v)).toBeUndefined();
  });

  it('refuses other values, listing the available ones', () => {
    expect(check('wal_level', 'bogus')).toBe('invalid value "bogus" for parameter wal_level (available values: minimal, replica, logical)');
    expect(check('wal_level', '')).toBe('invalid value "" for parameter wal_level (available values: minimal, replica, logical)');
    expect(check('wal_level', 1)).toMatch(/^invalid value "1" for parameter wal_level/);
    expect(check('IntervalStyle', 'iso')).toBe('invalid value "iso" for parameter IntervalStyle (available values: postgres, iso_8601)');
  });

  it('does not check an enum whose values are not known', () => {
    expect(check('future_enum', 'anything')).toBeUndefined();
  });

  it('accepts any string', () => {
    expect(check('search_path', '"$user", public')).toBeUndefined();
    expect(check('search_path', '')).toBeUndefined();
    expect(check('search_path', 42)).toBeUndefined();
  });

  it('accepts a postmaster-context parameter (a restart applies it; the check is the same)', () => {
    expect(check('max_connections', '200')).toBeUndefined();
    expect(check('wal_level', 'logical')).toBeUndefined();
  });
});

describe('checkParameters and filterParameters', () => {
  const params = { max_connections: 'lots', work_mem: '8MB', no_such_param: '1', 'pg_stat_statements.max': 10000, fsync: 'on' };

  it('lists every problem as database.parameters.<name>: <problem>, in key order', () => {
    expect(checkParameters(params, catalogue)).toEqual([
      'database.parameters.max_connections: invalid value "lots" for integer parameter max_connections',
      'database.parameters.no_such_param: unknown PostgreSQL parameter',
    ]);
    expect(checkParameters({ work_mem: '8MB', fsync: true }, catalogue)).toEqual([]);
    expect(checkParameters({}, catalogue)).toEqual([]);
  });

  it('keeps the acceptable parameters (same values and order) and reports the dropped ones', () => {
    const { kept, dropped } = filterParameters(params, catalogue);
    expect(kept).toEqual({ work_mem: '8MB', 'pg_stat_statements.max': 10000, fsync: 'on' });
    expect(Object.keys(kept)).toEqual(['work_mem', 'pg_stat_statements.max', 'fsync']);
    expect(dropped).toEqual([
      'database.parameters.max_connections: invalid value "lots" for integer parameter max_connections',
      'database.parameters.no_such_param: unknown PostgreSQL parameter',
    ]);
  });
});
