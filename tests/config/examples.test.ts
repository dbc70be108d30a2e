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
