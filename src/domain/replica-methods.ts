/**
 * Replica creation methods (patroni.md §3.10; docs/backups.md "Replica creation"): which methods a
 * clone tries, in which order, and the command line of a custom one. Pure; the node runs them
 * (src/node/local/replica-creation.ts).
 *
 * Rules, as the reference:
 * - `create_replica_methods` lists the methods in order (default `[basebackup]`); the first that
 *   succeeds wins, a failure falls back to the next. `basebackup` is the built-in one:
 *   pg_basebackup from the clone source (the leader, a `clonefrom` member, or a standby cluster's
 *   remote). An operator who wants it as the last resort lists it last.
 * - A method without `no_leader` needs a clone source (a running leader or remote): with none it is
 *   skipped. `basebackup` always needs one. A member with no data in an initialized cluster that has
 *   no leader clones by its `no_leader` methods (the reference's "bootstrap (without leader)").
 * - `POST /reinitialize` with `from-leader` (`hactl reinit --from-leader`) tries basebackup alone.
 * - A standby cluster's bootstrap tries `standby_cluster.create_replica_methods`, each name read
 *   from this member's sections (basebackup: pg_basebackup from the remote; without `host` there
 *   is no source, and only `no_leader` methods run).
 * - A custom method runs `<command> --scope=<scope> --role=replica --datadir=<data directory>
 *   --connstring=<conninfo of the source>` followed by its other keys as `--<key>=<value>`;
 *   with `no_params` only the other keys are added. `keep_data`: the data directory is not
 *   emptied first (a delta restore reuses it).
 */

/** The name of the built-in method. */
export const BASEBACKUP = 'basebackup';

/** One method as the node runs it. */
export interface ReplicaMethod {
  name: string;
  /** The shell command of a custom method; undefined for the built-in basebackup. */
  command?: string;
  /** Keep the data directory's content (a delta restore); always false for basebackup. */
  keepData: boolean;
  /** Works with no running leader (restores from a repository). */
  noLeader: boolean;
  /** Run the command without the reference's arguments. */
  noParams: boolean;
  /** The section's other keys, passed as `--<key>=<value>` in the order given. */
  args: Record<string, string | number | boolean>;
}

/** A method section as the configuration holds it (src/config/archive-keys.ts ReplicaMethodSection). */
export interface ReplicaMethodSectionLike {
  command: string;
  keep_data?: boolean;
  no_leader?: boolean;
  no_params?: boolean;
  [arg: string]: unknown;
}

/** A member's methods: `create_replica_methods` and the sections they name (ha.yml `database`). */
export interface ReplicaMethodsConfig {
  list: string[];
  sections: Record<string, ReplicaMethodSectionLike>;
}

/**
 * The methods of `names`, each read from `sections` (basebackup needs none). A name without a
 * section is left out and reported in `missing` (a standby cluster's list names methods the
 * dynamic configuration cannot check against every member's file).
 */
export function resolveMethods(
  names: readonly string[],
  sections: Readonly<Record<string, ReplicaMethodSectionLike>>,
): { methods: ReplicaMethod[]; missing: string[] } {
  const methods: ReplicaMethod[] = [];
  const missing: string[] = [];
  for (const name of names) {
    if (name === BASEBACKUP) {
      methods.push({ name, keepData: false, noLeader: false, noParams: false, args: {} });
      continue;
    }
    const s = sections[name];
    if (!s) {
      missing.push(name);
      continue;
    }
    const args: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(s)) {
      if (['command', 'keep_data', 'no_leader', 'no_params'].includes(k)) continue;
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') args[k] = v;
    }
    methods.push({
      name,
      command: s.command,
      keepData: s.keep_data === true,
      noLeader: s.no_leader === true,
      noParams: s.no_params === true,
      args,
    });
  }
  return { methods, missing };
}

/**
 * True when `cfg` lists a method that works with no running leader (`no_leader`): a member with no
 * data in an initialized cluster without a leader clones by it (src/domain/ha-cycle.ts withoutData).
 */
export function hasNoLeaderMethod(cfg: ReplicaMethodsConfig): boolean {
  return resolveMethods(cfg.list, cfg.sections).methods.some((m) => m.noLeader);
}

/** What one clone tries, and what it skips with why. */
export interface MethodPlan {
  tries: ReplicaMethod[];
  skipped: { name: string; reason: string }[];
}

/**
 * The methods one clone tries, in order.
 * @param methods this member's methods (resolveMethods of create_replica_methods), or a standby
 *   cluster's list for its bootstrap
 * @param opts.hasSource a clone source is known (a running leader, a clonefrom member, a remote)
 * @param opts.basebackupOnly an operator's reinitialize `from-leader`
 * @param opts.missing names without a section (skipped, with why)
 */
export function planMethods(
  methods: readonly ReplicaMethod[],
  opts: { hasSource: boolean; basebackupOnly?: boolean; missing?: readonly string[] },
): MethodPlan {
  const skipped = (opts.missing ?? []).map((name) => ({
    name,
    reason: `this member's configuration has no section database.${name} with its command`,
  }));
  if (opts.basebackupOnly) {
    const bb: ReplicaMethod = { name: BASEBACKUP, keepData: false, noLeader: false, noParams: false, args: {} };
    return opts.hasSource
      ? { tries: [bb], skipped: [] }
      : { tries: [], skipped: [{ name: BASEBACKUP, reason: 'no running member to copy from' }] };
  }
  const tries: ReplicaMethod[] = [];
  for (const m of methods) {
    if (!opts.hasSource && m.name === BASEBACKUP) skipped.push({ name: m.name, reason: 'no running member to copy from' });
    else if (!opts.hasSource && !m.noLeader) skipped.push({ name: m.name, reason: 'needs a running leader (no_leader is not set)' });
    else tries.push(m);
  }
  return { tries, skipped };
}

/** Quotes one word for /bin/sh: single quotes, `'` as `'\''`. */
export function shellWord(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The /bin/sh command line of a custom method: its command, then (unless `no_params`) `--scope=`,
 * `--role=replica`, `--datadir=`, `--connstring=` (when a source is known), then its other keys
 * as `--<key>=<value>`; every added argument is shell-quoted.
 * @throws Error for the built-in basebackup (it has no command line).
 */
export function methodCommandLine(m: ReplicaMethod, ctx: { scope: string; dataDir: string; connstring?: string }): string {
  if (m.command === undefined) throw new Error(`${m.name} is the built-in method: it has no command line`);
  const words: string[] = [];
  if (!m.noParams) {
    words.push(`--scope=${ctx.scope}`, '--role=replica', `--datadir=${ctx.dataDir}`);
    if (ctx.connstring !== undefined) words.push(`--connstring=${ctx.connstring}`);
  }
  for (const [k, v] of Object.entries(m.args)) words.push(`--${k}=${String(v)}`);
  return [m.command, ...words.map(shellWord)].join(' ');
}
