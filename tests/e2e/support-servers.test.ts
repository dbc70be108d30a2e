import { describe, expect, it } from 'vitest';
import { startPostgres } from '../support/pg.ts';
import { startEtcd } from '../support/etcd.ts';

describe('test servers', () => {
  it('starts and stops a real PostgreSQL', async () => {
    const pg = await startPostgres();
    try {
      expect(await pg.psql('select 1+1')).toBe('2\n');
    } finally {
      await pg.stop();
    }
  });
  it('starts and stops a real etcd', async () => {
    const etcd = await startEtcd();
    try {
      const r = await fetch(`${etcd.url}/version`);
      expect(((await r.json()) as { etcdserver: string }).etcdserver).toMatch(/^3\./);
    } finally {
      await etcd.stop();
    }
  });
});
