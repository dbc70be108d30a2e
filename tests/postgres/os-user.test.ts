/** Can the PostgreSQL OS user reach the data directory (src/postgres/os-user.ts; issue 30, item 1)? */
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertPgCanReach, maySearch, pgOsUser } from '../../src/postgres/os-user.ts';

describe('maySearch', () => {
  const pg = { uid: 100, gid: 100 };
  it.each([
    ['owner with u+x', { mode: 0o700, uid: 100, gid: 0 }, true],
    ['owner without u+x (group and others have x)', { mode: 0o611, uid: 100, gid: 100 }, false],
    ['group with g+x', { mode: 0o750, uid: 0, gid: 100 }, true],
    ['root-only 0700 (etcd --data-dir made it)', { mode: 0o700, uid: 0, gid: 0 }, false],
    ['others with o+x', { mode: 0o711, uid: 0, gid: 0 }, true],
  ] as const)('%s', (_n, entry, ok) => {
    expect(maySearch(pg, entry)).toBe(ok);
  });
  it('root enters everything', () => {
    expect(maySearch({ uid: 0, gid: 0 }, { mode: 0o000, uid: 5, gid: 5 })).toBe(true);
  });
});

describe('assertPgCanReach (as root: the postgres user)', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ha-reach-'));
    await chmod(dir, 0o755);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.skipIf(process.getuid?.() !== 0)(
    'a root-only directory above the data directory is named with its mode and the fix; a traversable one passes',
    async () => {
      const closed = join(dir, 'closed');
      await mkdir(closed, { mode: 0o700 });
      await chmod(closed, 0o700);
      await expect(assertPgCanReach(join(closed, 'node1', 'data'))).rejects.toThrow(
        new RegExp(
          `the PostgreSQL OS user ${pgOsUser().name} cannot enter ${closed} \\(mode rwx------, owner uid 0\\), above ${closed}/node1/data: allow it \\(chmod o\\+x ${closed}\\)`,
        ),
      );
      await chmod(closed, 0o711);
      await expect(assertPgCanReach(join(closed, 'node1', 'data'))).resolves.toBeUndefined();
    },
  );
});
