import { describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { classifyPgError, PgQueryError, PgUnreachableError } from '../../src/postgres/connection.ts';
import { checkInitdbOptions, DEFAULT_INITDB_OPTIONS, InitdbOptionError } from '../../src/postgres/initdb.ts';
import { shellQuote } from '../../src/postgres/local.ts';
import { parsePasswdEntry } from '../../src/postgres/os-user.ts';
import { isLivePostmasterStat } from '../../src/postgres/pg-ctl.ts';
import { quoteIdent, quoteLiteral } from '../../src/postgres/sql-quote.ts';

describe('initdb options (patroni.md §3.10)', () => {
  it('defaults to UTF8 / C.UTF-8 when none are given', () => {
    expect(checkInitdbOptions([])).toEqual(DEFAULT_INITDB_OPTIONS);
    expect(checkInitdbOptions(['--data-checksums', '--encoding=UTF8'])).toEqual(['--data-checksums', '--encoding=UTF8']);
  });
  it.each(['--pgdata=/x', '--nosync', '--no-sync', '--pwfile=/p', '--sync-only', '--version', '--username=x', '-D', 'encoding=UTF8'])(
    'rejects %s',
    (opt) => {
      expect(() => checkInitdbOptions([opt])).toThrow(InitdbOptionError);
    },
  );
});

describe('quoting', () => {
  it('quotes SQL literals and identifiers', () => {
    expect(quoteLiteral("it's")).toBe("'it''s'");
    expect(quoteLiteral('a\\b')).toBe("E'a\\\\b'");
    expect(quoteIdent('Repl"x')).toBe('"Repl""x"');
  });
  it('quotes shell words', () => {
    expect(shellQuote("a b'c")).toBe(`'a b'\\''c'`);
  });
});

describe('os user', () => {
  it('finds an /etc/passwd entry', () => {
    const passwd = 'root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\n';
    expect(parsePasswdEntry(passwd, 'postgres')).toEqual({ uid: 101, gid: 104, home: '/var/lib/postgresql' });
    expect(parsePasswdEntry(passwd, 'nobody')).toBeUndefined();
  });
});

describe('postmaster liveness from /proc/<pid>/stat', () => {
  it('accepts a running postgres, rejects zombies and other commands', () => {
    expect(isLivePostmasterStat('1602 (postgres) S 1 1602 1602 0 -1')).toBe(true);
    expect(isLivePostmasterStat('1487 (postgres) Z 1 1487 1487 0 -1')).toBe(false);
    expect(isLivePostmasterStat('1487 (bash) S 1 1487 1487 0 -1')).toBe(false);
  });
});

describe('classifyPgError (stack.md §3)', () => {
  it.each(['ECONNREFUSED', 'ENOENT', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', '57P03', '57P01', '08006'])('%s is unreachable', (code) => {
    const e = classifyPgError(Object.assign(new Error('x'), { code }));
    expect(e).toBeInstanceOf(PgUnreachableError);
    expect((e as PgUnreachableError).code).toBe('pg_unreachable');
  });
  it('a SQL error is pg_query_failed with its SQLSTATE', () => {
    const e = classifyPgError(Object.assign(new Error('read-only'), { code: '25006' }));
    expect(e).toBeInstanceOf(PgQueryError);
    expect(e).toMatchObject({ code: 'pg_query_failed', sqlState: '25006' });
    expect(typeof postgres.PostgresError).toBe('function');
  });
});

describe('detectBinDir', () => {
  it('returns the configured directory as is', async () => {
    const { detectBinDir } = await import('../../src/postgres/bin-dir.ts');
    expect(detectBinDir('/opt/pg/bin')).toBe('/opt/pg/bin');
  });
});
