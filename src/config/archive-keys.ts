/**
 * The keys of a member's file about the WAL archive, backups and replica creation
 * (docs/backups.md; patroni.md §3.9, §3.10):
 * - `database.recovery_conf`: `restore_command`, `archive_cleanup_command`,
 *   `recovery_min_apply_delay`, written for every replica (a replica whose WAL the primary
 *   recycled catches up from the archive, then streams again);
 * - `database.create_replica_methods` and one section `database.<method>` per method other than
 *   the built-in `basebackup`: `{command, keep_data, no_leader, no_params, <other>: value}`;
 * - a custom bootstrap method's own keys (`bootstrap.<method>`): `no_params`,
 *   `keep_existing_recovery_conf`, `recovery_conf` (the targeted recovery of a restore to a point
 *   in time: restore_command, recovery_target*, recovery_target_action `promote`);
 * - `backup` (ours): the commands `hactl backup` runs on a member (`command`, and `create` run first
 *   when asked, e.g. pgBackRest's stanza-create).
 * What the agent does not honour is refused, naming the key. Schemas only; no I/O.
 */
import * as v from 'valibot';
import { Bool, isMapping, mapping, NonEmptyString, NonNegativeInteger } from './fields.ts';
import { issueProblem } from './issues.ts';

const mappingMessage = (i: { received: string }) => `must be a mapping, got ${i.received}`;

/** A command line or setting written into postgresql.conf or run through /bin/sh: one line. */
export const OneLineCommand = v.pipe(
  NonEmptyString,
  v.check((s) => !/[\n\r\0]/.test(s), 'must be one line (no line breaks)'),
);

const APPLY_DELAY = (i: { input: unknown }) =>
  `must be milliseconds (an integer >= 0) or a duration such as "5min", got ${JSON.stringify(i.input)}`;

/** `recovery_min_apply_delay`: milliseconds, or a duration text with PostgreSQL's units. */
const ApplyDelay = v.union([NonNegativeInteger, v.pipe(v.string(), v.regex(/^\d+\s*(us|ms|s|min|h|d)?$/, APPLY_DELAY))], APPLY_DELAY);

/** The keys of `database.recovery_conf` (the replicas' archive settings). */
export const REPLICA_RECOVERY_KEYS = ['restore_command', 'archive_cleanup_command', 'recovery_min_apply_delay'] as const;

/**
 * `database.recovery_conf`: what every replica (and the standby leader, unless `standby_cluster`
 * names its own) runs with. The recovery targets are refused here (a replica that stops at a
 * target stops following its leader): they belong to a bootstrap method's `recovery_conf`.
 */
export const ReplicaRecoveryConf = mapping(
  v.strictObject(
    {
      restore_command: v.optional(OneLineCommand),
      archive_cleanup_command: v.optional(OneLineCommand),
      recovery_min_apply_delay: v.optional(ApplyDelay),
    },
    mappingMessage,
  ),
);

/** Output of {@link ReplicaRecoveryConf}. */
export type ReplicaRecoveryConfig = v.InferOutput<typeof ReplicaRecoveryConf>;

/** `recovery_target_action` of a restore to a point in time: only `promote` (module docstring). */
const TargetAction = v.pipe(
  v.string((i) => `must be a string, got ${i.received}`),
  v.check(
    (s) => s === 'promote',
    (i) =>
      `only promote is honoured, got ${JSON.stringify(i.input)}: the restored member must become the primary the others join (pause or shutdown would leave the cluster without one)`,
  ),
);

/**
 * A custom bootstrap method's `recovery_conf` (patroni.md §3.10): the targeted recovery the
 * agent writes (postgresql.conf and recovery.signal) before the first start of the restored data
 * directory. At most one target kind.
 */
export const BootstrapRecoveryConf = v.pipe(
  mapping(
    v.strictObject(
      {
        restore_command: v.optional(OneLineCommand),
        recovery_target: v.optional(
          v.picklist(['immediate'], (i) => `must be immediate (the end of the backup), got ${JSON.stringify(i.input)}`),
        ),
        recovery_target_time: v.optional(OneLineCommand),
        recovery_target_lsn: v.optional(
          v.pipe(
            v.string((i) => `must be an LSN such as "0/3000028", got ${i.received}`),
            v.regex(/^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/, 'must be an LSN such as "0/3000028"'),
          ),
        ),
        recovery_target_name: v.optional(OneLineCommand),
        recovery_target_xid: v.optional(
          v.union([NonNegativeInteger, v.pipe(v.string(), v.regex(/^\d+$/, 'must be a transaction id'))], 'must be a transaction id'),
        ),
        recovery_target_inclusive: v.optional(Bool),
        recovery_target_timeline: v.optional(
          v.union([NonNegativeInteger, v.picklist(['latest', 'current'])], 'must be latest, current or a timeline number'),
        ),
        recovery_target_action: v.optional(TargetAction),
      },
      mappingMessage,
    ),
  ),
  v.check(
    (o) =>
      ['recovery_target', 'recovery_target_time', 'recovery_target_lsn', 'recovery_target_name', 'recovery_target_xid'].filter(
        (k) => (o as Record<string, unknown>)[k] !== undefined,
      ).length <= 1,
    'names more than one recovery target (recovery_target, _time, _lsn, _name, _xid): PostgreSQL takes one',
  ),
);

/** Output of {@link BootstrapRecoveryConf}. */
export type BootstrapRecoveryConfig = v.InferOutput<typeof BootstrapRecoveryConf>;

/** A value passed to a method's command as `--<key>=<value>`. */
const ArgumentValue = v.union(
  [v.string(), v.number(), v.boolean()],
  (i) => `must be a string, number or boolean (passed as --key=value), got ${i.received}`,
);

/** The option keys of a replica creation method section (never passed to the command). */
export const REPLICA_METHOD_OPTIONS = ['command', 'keep_data', 'no_leader', 'no_params'] as const;

/**
 * One replica creation method, `database.<name>` (patroni.md §3.10): `command` run through
 * /bin/sh as the PostgreSQL OS user with `--scope= --role=replica --datadir= --connstring=`
 * unless `no_params`; `keep_data`: the data directory is not emptied first (pgBackRest's delta
 * restore); `no_leader`: the method works with no running leader (it restores from a repository): a
 * member with no data in an initialized cluster without a leader, and a standby cluster's bootstrap
 * without `host`, run only such methods (src/domain/replica-methods.ts). Every other key is passed
 * as `--<key>=<value>`.
 */
export const ReplicaMethodSection = mapping(
  v.objectWithRest(
    {
      command: OneLineCommand,
      keep_data: v.optional(Bool),
      no_leader: v.optional(Bool),
      no_params: v.optional(Bool),
    },
    ArgumentValue,
    mappingMessage,
  ),
);

/** Output of {@link ReplicaMethodSection}. */
export type ReplicaMethodConfig = v.InferOutput<typeof ReplicaMethodSection>;

/** The built-in replica creation method (pg_basebackup from the leader or a `clonefrom` member). */
export const BUILTIN_REPLICA_METHOD = 'basebackup';

/** `database.create_replica_methods`: method names in the order they are tried. */
export const CreateReplicaMethods = v.pipe(
  v.array(
    v.pipe(
      v.string((i) => `must be a method name, got ${i.received}`),
      v.regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'must be a method name (letters, digits, _ or -)'),
    ),
    (i) => `must be a list of method names, got ${i.received}`,
  ),
  v.minLength(1, 'must name at least one method (basebackup is the built-in one)'),
  v.check((a) => new Set(a).size === a.length, 'names a method twice'),
);

/**
 * Checks the replica method sections of a `database` section (run as a raw check of the section):
 * every key that is not one of `known` must be a method named in `create_replica_methods` (else it
 * is an unknown key), with a valid section; every listed method but `basebackup` needs its
 * section; `basebackup` takes no section (pg_basebackup runs with the agent's options).
 */
export function replicaMethodIssues(
  section: Record<string, unknown>,
  known: readonly string[],
): { key: string | undefined; message: string }[] {
  const out: { key: string | undefined; message: string }[] = [];
  const listed = Array.isArray(section['create_replica_methods'])
    ? section['create_replica_methods'].filter((m): m is string => typeof m === 'string')
    : [];
  for (const key of Object.keys(section)) {
    if (known.includes(key)) continue;
    if (key === BUILTIN_REPLICA_METHOD) {
      out.push({ key, message: "not implemented: pg_basebackup runs with the agent's own options" });
      continue;
    }
    if (!listed.includes(key)) {
      out.push({
        key,
        message:
          isMapping(section[key]) && 'command' in section[key]
            ? 'unknown key (a replica creation method section: name it in create_replica_methods)'
            : 'unknown key',
      });
      continue;
    }
    const r = v.safeParse(ReplicaMethodSection, section[key]);
    if (!r.success) {
      for (const i of r.issues) out.push({ key: [key, ...(i.path ?? []).map((p) => String(p.key))].join('.'), message: issueProblem(i) });
    }
  }
  for (const m of listed) {
    if (m !== BUILTIN_REPLICA_METHOD && !Object.hasOwn(section, m)) {
      out.push({ key: 'create_replica_methods', message: `names ${m}, which has no section ${m} (with its command) in this section` });
    }
  }
  return out;
}

/**
 * `backup` (ours; docs/backups.md): `command` runs a backup on the member `hactl backup` (POST
 * /backup) names, through /bin/sh as the PostgreSQL OS user; `create` runs first when asked
 * (`hactl backup --create`, e.g. `pgbackrest --stanza=<scope> stanza-create`).
 */
export const BackupSection = mapping(
  v.strictObject(
    {
      command: OneLineCommand,
      create: v.optional(OneLineCommand),
    },
    mappingMessage,
  ),
);

/** Output of {@link BackupSection}. */
export type BackupConfig = v.InferOutput<typeof BackupSection>;
