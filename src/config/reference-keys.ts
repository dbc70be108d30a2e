/**
 * Keys of the reference's member configuration file (`patroni.yml`, patroni.md §4.1; Patroni
 * 3.0.2 as Debian ships it) that this agent does not implement, each with why. They are refused
 * in either dialect, naming each, never ignored (issue 26): the reference would obey them, so a
 * file that sets one would not do here what its author expects.
 *
 * Paths are in the native names (`database`, not `postgresql`: the loader renames the section
 * first, src/config/local-dialect.ts, and names problems in the file's own names); `*` matches
 * any key at that place. Pure data and one lookup.
 */

/** Why a DCS other than etcd v3 is refused. */
const OTHER_DCS = 'not implemented: the only DCS is etcd v3 (section etcd3)';
/** Why a cluster-wide setting is refused in a member's file. */
const CLUSTER_WIDE =
  "a cluster-wide setting here: set it in bootstrap.dcs's database (postgresql) section for a new cluster, or change the cluster's with PATCH /config or hactl edit-config; a member's file does not override the dynamic configuration";
/** Why a recovery target is refused for replicas. */
const REPLICA_TARGET = 'not honoured for replicas: a replica that stops at a recovery target stops following its leader';
/** Why a custom bootstrap method's recovery options are refused (a restore to a point in time: not built yet). */
/** Why TLS and GSS options of the agent's database connections are refused. */
const CONNECTION_OPTION = "not implemented: the agent's database connections take a username and a password only";
/** Why log options other than the level are refused. */
const LOG_OPTION = 'not implemented: the agent writes JSON lines to standard error; only log.level is read';

/**
 * Native path (dot-separated, `*` for any key) -> why it is refused. Keys the agent implements
 * under another shape are not here (src/config/local-dialect.ts converts them: `etcd3.host`,
 * `create_replica_method`, `use_unix_socket: true`, `use_unix_socket_repl: false`).
 */
export const UNIMPLEMENTED_FILE_KEYS: Readonly<Record<string, string>> = {
  etcd: "not implemented: this agent speaks the etcd v3 API only (section etcd3, the same keys); the reference's etcd section uses the v2 API, whose keys etcd v3 does not see",
  consul: OTHER_DCS,
  zookeeper: OTHER_DCS,
  exhibitor: OTHER_DCS,
  kubernetes: OTHER_DCS,
  raft: OTHER_DCS,
  citus: 'not implemented: Citus clusters are not supported',
  'restapi.ciphers': "not implemented: the node API uses Node.js's default TLS ciphers",
  'restapi.request_queue_size': 'not implemented: one event loop serves the node API (see restapi.max_unsafe_requests)',
  'restapi.thread_pool_size': 'not implemented: one event loop serves the node API (see restapi.max_unsafe_requests)',
  'restapi.server_tokens': 'not implemented: the Server header of the node API is not configurable',
  'etcd3.url': 'not implemented: give the endpoints as host:port in etcd3.hosts (and etcd3.protocol)',
  'etcd3.proxy': 'not implemented: give the endpoints as host:port in etcd3.hosts',
  'etcd3.srv': 'not implemented: no DNS SRV discovery; give the endpoints in etcd3.hosts',
  'etcd3.srv_suffix': 'not implemented: no DNS SRV discovery; give the endpoints in etcd3.hosts',
  'etcd3.use_proxies': 'not implemented: the agent talks to the endpoints of etcd3.hosts as given',
  'etcd3.port': 'not implemented: give host:port in etcd3.hosts',
  'etcd3.retry_timeout': 'a cluster-wide setting here: retry_timeout in bootstrap.dcs, or PATCH /config',
  'bootstrap.users': 'not implemented: create the roles once the cluster runs (the reference deprecated bootstrap.users too)',
  'bootstrap.post_bootstrap': 'not implemented: no program runs after the bootstrap',
  'bootstrap.post_init': 'not implemented: no program runs after the bootstrap',
  'database.proxy_address': 'not implemented: members publish no address of a connection pooler',
  'database.config_dir': "not implemented: PostgreSQL's configuration files live in data_dir",
  'database.bin_name': 'not implemented: the PostgreSQL programs are found under their own names in bin_dir',
  'database.authentication.rewind': 'not implemented: pg_rewind connects as the superuser',
  'database.authentication.*.sslmode': CONNECTION_OPTION,
  'database.authentication.*.sslcert': CONNECTION_OPTION,
  'database.authentication.*.sslkey': CONNECTION_OPTION,
  'database.authentication.*.sslpassword': CONNECTION_OPTION,
  'database.authentication.*.sslrootcert': CONNECTION_OPTION,
  'database.authentication.*.sslcrl': CONNECTION_OPTION,
  'database.authentication.*.sslcrldir': CONNECTION_OPTION,
  'database.authentication.*.gssencmode': CONNECTION_OPTION,
  'database.authentication.*.channel_binding': CONNECTION_OPTION,
  'database.pg_ident': 'not implemented: the agent writes no pg_ident.conf',
  'database.use_pg_rewind': CLUSTER_WIDE,
  'database.use_db_rewind': CLUSTER_WIDE,
  'database.use_slots': CLUSTER_WIDE,
  'database.remove_data_directory_on_rewind_failure': CLUSTER_WIDE,
  'database.remove_data_directory_on_diverged_timelines': CLUSTER_WIDE,
  'database.basebackup': "not implemented: pg_basebackup runs with the agent's own options",
  'database.recovery_conf.recovery_target': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_time': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_lsn': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_name': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_xid': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_inclusive': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_action': REPLICA_TARGET,
  'database.recovery_conf.recovery_target_timeline':
    'not implemented: replicas always follow the latest timeline (recovery_target_timeline = latest)',
  'database.recovery_conf.recovery_end_command': 'not implemented: no program runs at the end of recovery',
  'database.recovery_conf.primary_conninfo':
    "not implemented: the agent writes primary_conninfo itself, from the leader's (or replicatefrom member's) address",
  'database.recovery_conf.primary_slot_name':
    'not implemented: the agent names the slot after the member (use_slots), or standby_cluster.primary_slot_name',
  'database.recovery_conf.standby_mode': 'not implemented: replicas always run in standby mode (standby.signal)',
  'database.pre_promote': 'not implemented: no program runs before a promotion (the fence guards it: docs/ha.md "Fencing")',
  'database.before_stop': 'not implemented: no program runs before PostgreSQL stops',
  'database.pg_ctl_timeout': "not implemented: the agent's own start and stop timeouts apply",
  'database.krbsrvname': CONNECTION_OPTION,
  'database.parameters_primary': 'not implemented: the parameters are the same for every role',
  'database.parameters_replica': 'not implemented: the parameters are the same for every role',
  'database.parameters_standby_leader': 'not implemented: the parameters are the same for every role',
  'watchdog.device': 'not implemented: there is no watchdog device; the fence is the agent\'s own (docs/ha.md "Fencing")',
  'watchdog.driver': 'not implemented: there is no watchdog device; the fence is the agent\'s own (docs/ha.md "Fencing")',
  'log.traceback_level': LOG_OPTION,
  'log.format': LOG_OPTION,
  'log.dateformat': LOG_OPTION,
  'log.max_queue_size': LOG_OPTION,
  'log.dir': LOG_OPTION,
  'log.file_num': LOG_OPTION,
  'log.file_size': LOG_OPTION,
  'log.loggers': LOG_OPTION,
};

/** Why the key at native `path` is refused, or undefined when the table does not name it. */
export function unimplementedWhy(path: readonly string[]): string | undefined {
  const exact = UNIMPLEMENTED_FILE_KEYS[path.join('.')];
  if (exact !== undefined) return exact;
  for (const [pattern, why] of Object.entries(UNIMPLEMENTED_FILE_KEYS)) {
    if (!pattern.includes('*')) continue;
    const parts = pattern.split('.');
    if (parts.length === path.length && parts.every((p, i) => p === '*' || p === path[i])) return why;
  }
  return undefined;
}
