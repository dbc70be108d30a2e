/**
 * The validated configuration of one node agent, as `loadConfig` returns it. Keys keep the
 * snake_case of ha.yml so the file, the docs (docs/configuration.md) and the code read alike.
 * Derived fields (filled by the loader, never absent): `restapi.connect_address`,
 * `database.connect_address`, `database.socket_dir`, `etcd3.hosts` as a list,
 * `bootstrap.initdb` as initdb arguments, `bootstrap.dcs` with the dynamic defaults,
 * `bootstrap.methods` (the custom bootstrap sections).
 */
import type { DynamicConfig } from '../domain/dynamic-config.ts';
import type { Tags } from '../domain/member.ts';

/** Log levels accepted by `log.level` (pino's names). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A database role the agent logs in as. `password` absent = none sent (trust/peer auth). */
export interface RoleCredentials {
  username: string;
  password?: string;
}

/** A custom bootstrap method section: `<name>: { command: "/path/script", ...other keys kept }`. */
export interface CustomBootstrapMethod {
  command: string;
  [other: string]: unknown;
}

/** The whole validated configuration. */
export interface AgentConfig {
  /** Cluster name; also PostgreSQL's cluster_name. */
  scope: string;
  /** DCS key prefix, always starting and ending with `/` (default `/service/`). */
  namespace: string;
  /** This member's name, unique in the cluster. */
  name: string;
  restapi: {
    /** `host:port` the node API listens on. */
    listen: string;
    /** `host:port` other members and clients use; defaults to `listen`. */
    connect_address: string;
  };
  etcd3: {
    /** etcd endpoints as `host:port`, at least one. */
    hosts: string[];
  };
  bootstrap: {
    /** Dynamic configuration seeded into the DCS by the bootstrap winner, defaults filled in. */
    dcs: DynamicConfig;
    /** `initdb` or the name of a key of `methods`. */
    method: string;
    /** initdb arguments: `--key=value` / `--flag`. */
    initdb: string[];
    /** pg_hba.conf lines written after initdb. */
    pg_hba: string[];
    /** Custom bootstrap sections, by name. */
    methods: Record<string, CustomBootstrapMethod>;
  };
  database: {
    /** `host:port` PostgreSQL listens on (listen_addresses and port). */
    listen: string;
    /** `host:port` other members use to reach this PostgreSQL; defaults to `listen`. */
    connect_address: string;
    /** Absolute path of PGDATA. */
    data_dir: string;
    /** PostgreSQL binaries; absent = auto-detected by the postgres module. */
    bin_dir?: string;
    /** unix_socket_directories; default `<dirname(data_dir)>/.<name>-sock`. */
    socket_dir: string;
    authentication: {
      superuser: RoleCredentials;
      replication: RoleCredentials;
    };
    /** Local PostgreSQL parameters. */
    parameters: Record<string, string | number | boolean>;
    /** Local pg_hba.conf lines. */
    pg_hba: string[];
  };
  /** Member tags; when `nofailover: true` and `failover_priority` are both set, nofailover wins. */
  tags: Tags;
  log: { level: LogLevel };
}
