/** A minimal valid ha.yml, used by the config tests. */
export const GOOD_YAML = `
scope: demo
name: node1
restapi:
  listen: 127.0.0.1:8008
etcd3:
  hosts: [127.0.0.1:2379]
database:
  listen: 127.0.0.1:5432
  data_dir: /var/lib/ha/node1
  authentication:
    superuser: { username: postgres, password: su-secret }
    replication: { username: replicator, password: repl-secret }
`;
