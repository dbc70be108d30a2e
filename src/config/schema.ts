/**
 * valibot schema of ha.yml after environment overrides (patroni.md §4.1, reduced to the keys
 * this agent uses). Sections are strict: a key this agent does not know is reported as
 * "unknown key" rather than silently ignored (a misspelt `conect_address` would otherwise fall
 * back to its default). Open mappings: `tags`, `bootstrap.dcs`, `*.parameters`, custom
 * bootstrap sections.
 */
import * as v from 'valibot';
import { LOG_LEVELS } from './agent-config.ts';
import { DynamicConfigSchema } from './dynamic-schema.ts';
import { Bool, HbaLines, isMapping, mapping, HostPortString, NonEmptyString, NonNegativeInteger, Parameters } from './fields.ts';
import { InitdbOptionSchema } from './initdb.ts';
import { CALLBACK_NAMES, splitCommandLine, type CallbackName } from './command-line.ts';
import {
  BackupSection,
  BootstrapRecoveryConf,
  CreateReplicaMethods,
  OneLineCommand,
  ReplicaRecoveryConf,
  replicaMethodIssues,
} from './archive-keys.ts';

const mappingMessage = (i: { received: string }) => `must be a mapping, got ${i.received}`;

/** A name that becomes one DCS key segment: non-empty, no `/`. */
const KeySegment = v.pipe(
  NonEmptyString,
  v.check((s) => !s.includes('/') && !/\s/.test(s), 'must not contain "/" or whitespace'),
);

/** etcd3.hosts: a list of `host:port`, or one comma-separated string; becomes a list. */
const EtcdHosts = v.pipe(
  v.union([v.string(), v.array(v.unknown())], (i) => `must be a list of host:port or a comma-separated string, got ${i.received}`),
  v.transform((h) =>
    typeof h === 'string'
      ? h
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : h,
  ),
  v.array(HostPortString),
  v.minLength(1, 'must name at least one etcd host:port'),
);

/** A path of a certificate, key or CA file (read when the agent starts and on reload). */
const FilePath = NonEmptyString;

/**
 * A secret: a string (quote numeric ones). The message never shows the value (a numeric
 * password would otherwise be printed in the configuration error).
 */
const Secret = v.string(
  (i) => `must be a string (quote it), got ${i.expected === 'string' && typeof i.input === 'number' ? 'a number' : i.received}`,
);

const Role = mapping(v.strictObject({ username: NonEmptyString, password: v.optional(Secret) }, mappingMessage));

/** `{username, password}`: HTTP basic authentication credentials, both required. */
const BasicAuth = mapping(
  v.strictObject({ username: NonEmptyString, password: v.pipe(Secret, v.nonEmpty('must not be empty')) }, mappingMessage),
);

/** Extra response headers: name -> value (strings). */
const ExtraHeaders = mapping(
  v.record(
    v.pipe(v.string(), v.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a valid header name')),
    v.string((i) => `header values must be strings, got ${i.received}`),
    (i) => `must be a mapping of header: value, got ${i.received}`,
  ),
);

/** A list of hosts, IP addresses or CIDRs; one comma-separated string is accepted too. */
const AllowList = v.pipe(
  v.union([v.string(), v.array(v.unknown())], (i) => `must be a list of hosts, addresses or CIDRs, got ${i.received}`),
  v.transform((h) =>
    typeof h === 'string'
      ? h
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : h,
  ),
  v.array(NonEmptyString),
);

/** The node API (patroni.md §1.2, §4.1): listen address, TLS, authentication, allowlist, limits. */
const RestApi = mapping(
  v.strictObject(
    {
      listen: HostPortString,
      connect_address: v.optional(HostPortString),
      certfile: v.optional(FilePath),
      keyfile: v.optional(FilePath),
      keyfile_password: v.optional(Secret),
      cafile: v.optional(FilePath),
      verify_client: v.optional(
        v.picklist(['none', 'optional', 'required'], (i) => `must be one of none, optional, required, got ${i.received}`),
      ),
      authentication: v.optional(BasicAuth),
      allowlist: v.optional(AllowList),
      allowlist_include_members: v.optional(Bool),
      http_extra_headers: v.optional(ExtraHeaders),
      https_extra_headers: v.optional(ExtraHeaders),
      max_body_bytes: v.optional(
        v.pipe(
          NonNegativeInteger,
          v.minValue(1024, (i) => `must be at least 1024, got ${i.received}`),
        ),
      ),
      max_unsafe_requests: v.optional(
        v.pipe(
          NonNegativeInteger,
          v.minValue(1, (i) => `must be at least 1, got ${i.received}`),
        ),
      ),
    },
    mappingMessage,
  ),
);

/** etcd v3 (patroni.md §2.5): endpoints, TLS (`protocol: https`, `cacert`, `cert`, `key`) and etcd users. */
const Etcd3 = mapping(
  v.strictObject(
    {
      hosts: EtcdHosts,
      protocol: v.optional(v.picklist(['http', 'https'], (i) => `must be http or https, got ${i.received}`)),
      cacert: v.optional(FilePath),
      cert: v.optional(FilePath),
      key: v.optional(FilePath),
      username: v.optional(NonEmptyString),
      password: v.optional(Secret),
    },
    mappingMessage,
  ),
);

/** hactl's client settings (patroni.md §4.1 `ctl`). */
const Ctl = mapping(
  v.strictObject(
    {
      insecure: v.optional(Bool),
      cacert: v.optional(FilePath),
      certfile: v.optional(FilePath),
      keyfile: v.optional(FilePath),
      keyfile_password: v.optional(Secret),
      authentication: v.optional(BasicAuth),
    },
    mappingMessage,
  ),
);

const Tags = mapping(
  v.looseObject(
    {
      nofailover: v.optional(Bool),
      noloadbalance: v.optional(Bool),
      clonefrom: v.optional(Bool),
      nosync: v.optional(Bool),
      failover_priority: v.optional(NonNegativeInteger),
      // Cascading replication (docs/ha.md "Cascading replication"): the member to stream from.
      replicatefrom: v.optional(KeySegment),
      // A member that never streams needs archive recovery (restore_command), which this agent does
      // not configure: `true` is refused rather than accepted and ignored.
      nostream: v.optional(
        v.pipe(
          Bool,
          v.check(
            (b) => b === false,
            'is not supported: a member without streaming needs archive recovery (restore_command), which this agent does not configure; remove the tag',
          ),
        ),
      ),
    },
    mappingMessage,
  ),
);

/** Keys of `bootstrap` that are not custom method sections. */
const BOOTSTRAP_KEYS: readonly string[] = ['dcs', 'method', 'initdb', 'pg_hba'];

/**
 * A custom bootstrap method (patroni.md §3.10; docs/backups.md "Disaster recovery"): `command`
 * run with `--scope= --datadir=` unless `no_params`; `recovery_conf`: the targeted recovery the
 * agent writes before the first start; `keep_existing_recovery_conf`: the recovery settings the
 * command wrote (recovery.signal, postgresql.auto.conf) are kept instead. Every other key is passed
 * as `--<key>=<value>`.
 */
const CustomMethod = mapping(
  v.objectWithRest(
    {
      command: OneLineCommand,
      no_params: v.optional(Bool),
      keep_existing_recovery_conf: v.optional(Bool),
      recovery_conf: v.optional(BootstrapRecoveryConf),
    },
    v.union([v.string(), v.number(), v.boolean()], (i) => `must be a string, number or boolean (passed as --key=value), got ${i.received}`),
    mappingMessage,
  ),
);

const Bootstrap = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, mappingMessage),
  v.objectWithRest(
    {
      dcs: v.optional(DynamicConfigSchema, {}),
      method: v.optional(KeySegment, 'initdb'),
      initdb: v.optional(
        v.array(InitdbOptionSchema, (i) => `must be a list, got ${i.received}`),
        [],
      ),
      pg_hba: v.optional(HbaLines, []),
    },
    CustomMethod,
    mappingMessage,
  ),
  v.forward(
    v.check(
      (b) => b.method === 'initdb' || (Object.hasOwn(b, b.method) && !BOOTSTRAP_KEYS.includes(b.method)),
      (i) => `"${(i.input as { method: string }).method}" is neither initdb nor a section of bootstrap`,
    ),
    ['method'],
  ),
);

/**
 * A callback program: a command line (split into words as a shell would, nothing expanded) or a
 * list of words; always a non-empty list of words after validation.
 */
const CallbackCommand = v.pipe(
  v.union([v.string(), v.array(v.string())], (i) => `must be a command line or a list of words, got ${i.received}`),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    let words: string[];
    try {
      words = typeof dataset.value === 'string' ? splitCommandLine(dataset.value) : dataset.value;
    } catch (e) {
      addIssue({ message: `cannot split the command line: ${(e as Error).message}` });
      return NEVER;
    }
    if (words.length === 0 || words[0] === '') {
      addIssue({ message: 'must name a program' });
      return NEVER;
    }
    return words;
  }),
);

/** `database.callbacks` (patroni.md §3.11): only the five known names; each a program run with `<action> <role> <scope>`. */
const Callbacks = mapping(
  v.strictObject(
    Object.fromEntries(CALLBACK_NAMES.map((n) => [n, v.optional(CallbackCommand)])) as Record<
      CallbackName,
      v.OptionalSchema<typeof CallbackCommand, undefined>
    >,
    mappingMessage,
  ),
);

const DatabaseEntries = {
  listen: HostPortString,
  connect_address: v.optional(HostPortString),
  data_dir: v.pipe(NonEmptyString, v.startsWith('/', 'must be an absolute path')),
  bin_dir: v.optional(NonEmptyString),
  socket_dir: v.optional(v.pipe(NonEmptyString, v.startsWith('/', 'must be an absolute path'))),
  pgpass: v.optional(v.pipe(NonEmptyString, v.startsWith('/', 'must be an absolute path'))),
  authentication: mapping(v.strictObject({ superuser: Role, replication: Role }, mappingMessage)),
  parameters: v.optional(Parameters, {}),
  pg_hba: v.optional(HbaLines, []),
  callbacks: v.optional(Callbacks),
  // docs/backups.md: how replicas are made, and what they recover from the archive with.
  create_replica_methods: v.optional(CreateReplicaMethods),
  recovery_conf: v.optional(ReplicaRecoveryConf),
};

/**
 * The database section: strict, except the sections of the replica creation methods that
 * `create_replica_methods` names (`database.<method>`, archive-keys.ts replicaMethodIssues); any
 * other key is unknown.
 */
const Database = v.pipe(
  v.custom<Record<string, unknown>>(isMapping, mappingMessage),
  v.objectWithRest(DatabaseEntries, v.unknown(), mappingMessage),
  v.rawCheck(({ dataset, addIssue }) => {
    // Also when another key of the section failed (the dataset is then untyped): an unknown key
    // is reported with the other problems, not hidden behind them.
    if (!isMapping(dataset.value)) return;
    const value = dataset.value as Record<string, unknown>;
    for (const p of replicaMethodIssues(value, Object.keys(DatabaseEntries))) {
      const [first, ...rest] = (p.key ?? '')
        .split('.')
        .map((key) => ({ type: 'object' as const, origin: 'value' as const, input: value, key, value: undefined }));
      addIssue(p.key === undefined || !first ? { message: p.message } : { message: p.message, path: [first, ...rest] });
    }
  }),
);

/**
 * `watchdog` (patroni.md §3.12; docs/ha.md "Fencing"): the software fence of this member's
 * PostgreSQL. `mode` off | automatic | required (default automatic, as the reference);
 * `safety_margin` seconds before the lease can expire at which the fence fires (default 5; −1 =
 * ttl / 2, as the reference). `device` has no meaning here (there is no device) and is refused.
 */
const Watchdog = mapping(
  v.strictObject(
    {
      mode: v.optional(
        v.picklist(['off', 'automatic', 'required'], (i) => `must be one of off, automatic, required, got ${i.received}`),
        'automatic',
      ),
      safety_margin: v.optional(
        v.pipe(
          v.number((i) => `must be a number of seconds, got ${i.received}`),
          v.integer((i) => `must be an integer number of seconds, got ${i.received}`),
          v.check(
            (n) => n === -1 || n >= 1,
            (i) => `must be at least 1 second (or -1 for ttl / 2), got ${String(i.input)}`,
          ),
        ),
      ),
    },
    mappingMessage,
  ),
);

/** The whole file. Output: as written, with defaults of optional sections filled in. */
export const FileSchema = v.strictObject(
  {
    scope: KeySegment,
    namespace: v.optional(NonEmptyString, '/service/'),
    name: KeySegment,
    restapi: RestApi,
    etcd3: Etcd3,
    ctl: v.optional(Ctl),
    bootstrap: v.optional(Bootstrap, {}),
    database: Database,
    tags: v.optional(Tags, {}),
    watchdog: v.optional(Watchdog, {}),
    backup: v.optional(BackupSection),
    log: v.optional(
      mapping(
        v.strictObject(
          {
            level: v.optional(
              v.picklist(LOG_LEVELS, (i) => `must be one of ${LOG_LEVELS.join(', ')}, got ${i.received}`),
              'info',
            ),
          },
          mappingMessage,
        ),
      ),
      {},
    ),
  },
  (i) => `the configuration must be a mapping of sections, got ${i.received}`,
);

/** Output of {@link FileSchema}. */
export type FileConfig = v.InferOutput<typeof FileSchema>;

/** The entries of an object schema inside `schema` (through optional wrappers and pipes), if any. */
function objectEntries(schema: unknown): Record<string, unknown> | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as { entries?: Record<string, unknown>; wrapped?: unknown; pipe?: unknown[] };
  if (s.entries) return s.entries;
  if (s.wrapped !== undefined) return objectEntries(s.wrapped);
  if (Array.isArray(s.pipe)) {
    for (const item of s.pipe) {
      const e = objectEntries(item);
      if (e) return e;
    }
  }
  return undefined;
}

/**
 * The keys {@link FileSchema} knows in the section at `path` (native names: `[]` the top level,
 * `['database', 'authentication']`), for "did you mean" suggestions; undefined when `path` is not
 * a section with fixed keys.
 */
export function fileKeysAt(path: readonly string[]): string[] | undefined {
  let entries = objectEntries(FileSchema);
  for (const key of path) {
    entries = entries ? objectEntries(entries[key]) : undefined;
  }
  return entries ? Object.keys(entries) : undefined;
}
