import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';

describe('examples/standby-cluster', () => {
  it.each([
    ['dr1', '127.0.0.1:8020', '127.0.0.1:5440'],
    ['dr2', '127.0.0.1:8021', '127.0.0.1:5441'],
  ])('%s.yml validates, standby_cluster pointing at the demo cluster', async (name, rest, pg) => {
    const c = await loadConfig(`examples/standby-cluster/${name}.yml`, {});
    expect(c).toMatchObject({
      scope: 'demo-dr',
      name,
      restapi: { listen: rest },
      database: { listen: pg, data_dir: `/var/tmp/ha-demo/${name}` },
      bootstrap: { dcs: { standby_cluster: { host: '127.0.0.1', port: 5432 } } },
    });
  });
});
