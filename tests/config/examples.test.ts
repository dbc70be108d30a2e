import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';

describe('examples/three-nodes', () => {
  it.each([
    ['node1', '127.0.0.1:8008', '127.0.0.1:5432'],
    ['node2', '127.0.0.1:8009', '127.0.0.1:5433'],
    ['node3', '127.0.0.1:8010', '127.0.0.1:5434'],
  ])('%s.yml validates', async (name, rest, pg) => {
    const c = await loadConfig(`examples/three-nodes/${name}.yml`, {});
    expect(c).toMatchObject({
      scope: 'demo',
      name,
      etcd3: { hosts: ['127.0.0.1:2379'] },
      restapi: { listen: rest, connect_address: rest },
      database: { listen: pg, connect_address: pg, data_dir: `/var/tmp/ha-demo/${name}` },
    });
  });
});

describe('examples/secure-three-nodes', () => {
  const env = {
    HA_RESTAPI_PASSWORD: 'api-pw',
    HA_ETCD3_PASSWORD: 'etcd-pw',
    HA_SUPERUSER_PASSWORD: 'su-pw',
    HA_REPLICATION_PASSWORD: 'repl-pw',
  };
  it.each(['node1', 'node2', 'node3'])('%s.yml validates with its passwords from the environment', async (name) => {
    const c = await loadConfig(`examples/secure-three-nodes/${name}.yml`, env);
    expect(c.restapi).toMatchObject({
      certfile: '/var/tmp/ha-secure/tls/server.pem',
      verify_client: 'optional',
      authentication: { username: 'admin', password: 'api-pw' },
    });
    expect(c.etcd3).toMatchObject({ protocol: 'https', username: 'root', password: 'etcd-pw' });
  });

  it('holds no password itself: without the variables the API password is missing', async () => {
    await expect(loadConfig('examples/secure-three-nodes/node1.yml', {})).rejects.toThrow(/restapi\.authentication\.password/);
  });
});

describe('examples/pgbackrest', () => {
  it.each(['node1', 'node2'])(
    '%s.yml validates: archiving, restore_command, the pgBackRest method before basebackup, the backup section',
    async (name) => {
      const c = await loadConfig(`examples/pgbackrest/${name}.yml`, {});
      const conf = `--config=/var/tmp/ha-pgbr/${name}.pgbackrest.conf --stanza=pgbr`;
      expect(c.database.parameters).toMatchObject({ archive_mode: 'on', archive_command: `pgbackrest ${conf} archive-push %p` });
      expect(c.database.recovery_conf).toEqual({ restore_command: `pgbackrest ${conf} archive-get %f "%p"` });
      expect(c.database.create_replica_methods).toEqual(['pgbackrest', 'basebackup']);
      expect(c.database.replica_methods).toEqual({
        pgbackrest: { command: `pgbackrest ${conf} --delta --type=standby restore`, keep_data: true, no_params: true },
      });
      expect(c.backup).toEqual({ create: `pgbackrest ${conf} stanza-create`, command: `pgbackrest ${conf} backup` });
    },
  );

  it('dr1.yml validates: a standby cluster of pgbr fed by its archive alone, bootstrapped by a no_leader method', async () => {
    const c = await loadConfig('examples/pgbackrest/dr1.yml', {});
    const conf = '--config=/var/tmp/ha-pgbr/dr1.pgbackrest.conf --stanza=pgbr';
    expect(c.bootstrap?.dcs?.['standby_cluster']).toEqual({
      restore_command: `pgbackrest ${conf} archive-get %f "%p"`,
      create_replica_methods: ['pgbackrest'],
    });
    expect(c.database.replica_methods['pgbackrest']).toMatchObject({ keep_data: true, no_params: true, no_leader: true });
  });
});
