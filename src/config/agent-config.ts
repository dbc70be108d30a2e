/**
 * The validated configuration of one node agent, as `loadConfig` returns it. Keys keep the
 * snake_case of ha.yml so the file, the docs (docs/configuration.md) and the code read alike.
 * Derived fields (filled by the loader, never absent): `restapi.connect_address`,
 * `database.connect_address`, `database.socket_dir`, `etcd3.hosts` as a list,
 * `bootstrap.initdb` as initdb arguments, `bootstrap.dcs` with the dynamic defaults,
 * `bootstrap.methods` (the custom bootstrap sections).
 */
import type { DynamicConfig } from '../domain/dynamic-config.ts';
import type { CallbackName } from './command-line.ts';
import type { Tags } from '../domain/member.ts';
import type { BackupConfig, BootstrapRecoveryConfig, ReplicaMethodConfig, ReplicaRecoveryConfig } from './archive-keys.ts';

/** Log levels accepted by `log.level` (pino's names). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A database role the agent logs in as. `password` absent = none sent (trust/peer auth). */
export interface RoleCredentials {
  username: string;
  password?: string;
}

/** HTTP basic authentication credentials. */
export interface BasicCredentials {
  username: string;
  password: string;
}

/** Client certificate checking of the node API (patroni.md §1.2). */
export type VerifyClient = 'none' | 'optional' | 'required';

/**
 * The node API section. Optional keys are absent when not set; their defaults live in
 * src/http/api-security.ts (DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_UNSAFE_REQUESTS).
 */
export interface RestApiConfig {
  /** `host:port` the node API listens on. */
  listen: string;
  /** `host:port` other members and clients use; defaults to `listen`. */
  connect_address: string;
  /** PEM certificate chain; set = the API speaks HTTPS only. */
  certfile?: string;
  /** PEM private key; absent = the key is in `certfile`. */
  keyfile?: string;
  /** Passphrase of an encrypted key (secret). */
  keyfile_password?: string;
  /** PEM CA bundle: verifies client certificates (and members' certificates on member calls). */
  cafile?: string;
  /** Client certificates: `none` (default), `optional` (required on unsafe requests), `required` (TLS handshake). */
  verify_client?: VerifyClient;
  /** Basic authentication required on unsafe requests (POST, PUT, PATCH, DELETE). */
  authentication?: BasicCredentials;
  /** Hosts, addresses and CIDRs allowed to send unsafe requests. */
  allowlist?: string[];
  /** Also allow the hosts of every member's api_url. */
  allowlist_include_members?: boolean;
  /** Headers added to every answer. */
  http_extra_headers?: Record<string, string>;
  /** Headers added to every answer when TLS is on. */
  https_extra_headers?: Record<string, string>;
  /** Largest request body, bytes (default 65536). */
  max_body_bytes?: number;
  /** Unsafe requests served at once; more get 503 (default 4). */
  max_unsafe_requests?: number;
}

/** The etcd v3 section. */
export interface Etcd3Config {
  /** etcd endpoints as `host:port`, at least one. */
  hosts: string[];
  /** `https` when `cacert` or `cert` is set, else `http`, unless given. */
  protocol?: 'http' | 'https';
  /** PEM CA bundle verifying etcd's certificate. */
  cacert?: string;
  /** PEM client certificate (etcd `--client-cert-auth`). */
  cert?: string;
  /** PEM private key of `cert`. */
  key?: string;
  /** etcd user (etcd `auth enable`). */
  username?: string;
  /** Its password (secret). */
  password?: string;
}

/** hactl's client settings (patroni.md §4.1 `ctl`). */
export interface CtlConfig {
  /** Do not verify the members' certificates. */
  insecure?: boolean;
  /** PEM CA bundle verifying the members' certificates (fallback: restapi.cafile). */
  cacert?: string;
  /** Client certificate sent to the members. */
  certfile?: string;
  /** Its key (absent: in certfile). */
  keyfile?: string;
  /** Passphrase of the key (secret). */
  keyfile_password?: string;
  /** Basic credentials sent on every request (fallback: restapi.authentication). */
  authentication?: BasicCredentials;
}

/**
 * A custom bootstrap method section (patroni.md §3.10; docs/backups.md "Disaster recovery"):
 * `<name>: { command, no_params, keep_existing_recovery_conf, recovery_conf, <other>: value }`;
 * every other key is passed to the command as `--<key>=<value>`.
 */
export interface CustomBootstrapMethod {
  command: string;
  /** Run `command` as written, without `--scope=` and `--datadir=`. */
  no_params?: boolean;
  /** Keep the recovery settings the command wrote (recovery.signal, postgresql.auto.conf). */
  keep_existing_recovery_conf?: boolean;
  /** The targeted recovery the agent writes before the first start (a point-in-time restore). */
  recovery_conf?: BootstrapRecoveryConfig;
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
  restapi: RestApiConfig;
  etcd3: Etcd3Config;
  /** hactl's client settings (absent: hactl falls back to restapi's credentials and cafile). */
  ctl?: CtlConfig;
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
    /**
     * The replication user's password file the agent writes and primary_conninfo names (the
     * reference's `postgresql.pgpass`, kept under its name so a patroni.yml loads as it is);
     * absent: `<dirname(data_dir)>/<name>.pgpass`.
     */
    pgpass?: string;
    authentication: {
      superuser: RoleCredentials;
      replication: RoleCredentials;
    };
    /** Local PostgreSQL parameters. */
    parameters: Record<string, string | number | boolean>;
    /** Local pg_hba.conf lines. */
    pg_hba: string[];
    /** Programs run on database events, as lists of words (src/node/local/callbacks.ts); absent: none. */
    callbacks?: Partial<Record<CallbackName, string[]>>;
    /** Replica creation methods in the order tried (default `[basebackup]`; docs/backups.md). */
    create_replica_methods: string[];
    /** The sections of the methods other than `basebackup`, by name. */
    replica_methods: Record<string, ReplicaMethodConfig>;
    /** restore_command, archive_cleanup_command, recovery_min_apply_delay of every replica (empty: none). */
    recovery_conf: ReplicaRecoveryConfig;
  };
  /** Member tags; when `nofailover: true` and `failover_priority` are both set, nofailover wins. */
  tags: Tags;
  /** The backup commands `hactl backup` runs on this member (docs/backups.md); absent: none configured. */
  backup?: BackupConfig;
  /** The software fence of PostgreSQL (docs/ha.md "Fencing"; src/node/lock/fencing.ts). */
  /** `safety_margin_set`: the file wrote `safety_margin` (absent: the default 5 s). */
  watchdog: { mode: 'off' | 'automatic' | 'required'; safety_margin: number; safety_margin_set?: true };
  log: { level: LogLevel };
}
