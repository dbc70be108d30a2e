/**
 * The member configuration file in either dialect: ours (`database: …`) or the reference's
 * (`patroni.yml`: `postgresql: …`, patroni.md §4.1), read into the native form the schema
 * (src/config/schema.ts) validates. Issue 26: "`ha run` loads the reference's configuration file
 * as it is".
 *
 * The translation is a list of operations on the parsed document ({@link FileOp}), so that
 * `ha config convert` can apply the same operations to the YAML document and keep its comments
 * (src/config/convert.ts). In order:
 * 1. `postgresql` is renamed `database` (a file with both is refused: one section).
 * 2. Mappings left empty in YAML (`parameters:` with every line commented out: `null`) are
 *    dropped, as the reference reads them as empty.
 * 3. `bootstrap.dcs` in the reference's dialect (`postgresql: {use_pg_rewind, …}`) is converted
 *    to native meaning the same (src/domain/config-dialect.ts `convertDocument`: the reference's
 *    defaults written out where they differ from ours).
 * 4. Keys of the reference implemented under another shape: `etcd3.host: h:p` → `etcd3.hosts:
 *    [h:p]`; `create_replica_method` (its older name) → `create_replica_methods`;
 *    `use_unix_socket: true` and `use_unix_socket_repl: false` (what the agent always does)
 *    dropped, the other values refused.
 *    In the reference's dialect, one directory in `parameters.unix_socket_directories` becomes
 *    `socket_dir` (socketDirOfReference).
 * 5. Keys of the reference not implemented (src/config/reference-keys.ts) and keys of
 *    `bootstrap.dcs` the agent does not read (src/config/dynamic-keys.ts) are problems, named in
 *    the file's own names, and dropped so the schema does not name them again.
 * Pure.
 */
import { posix } from 'node:path';
import { convertDocument, DIALECT_NAMES, writtenDialect, type ConfigDialect } from '../domain/config-dialect.ts';
import { formatUnread, unreadKeys } from './dynamic-keys.ts';
import { isMapping } from './fields.ts';
import { unimplementedWhy } from './reference-keys.ts';

type Doc = Record<string, unknown>;

/** One operation of the translation: rename a key (same place), set a value, or delete a key. */
export type FileOp =
  | { op: 'rename'; path: string[]; to: string }
  | { op: 'set'; path: string[]; value: unknown }
  | { op: 'delete'; path: string[] };

/** The outcome of {@link translateFile}. */
export interface FileTranslation {
  /** The native document (a copy; the input is not changed). */
  doc: Doc;
  /** The operations that made `doc` from the input, in order (paths as at the time each runs). */
  ops: FileOp[];
  /** Problems, as `<dot.path>: <problem>` in the file's own names. */
  problems: string[];
  /** The dialect of the file: `patroni` when its database section is named `postgresql`. */
  dialect: ConfigDialect;
  /** The dialect `bootstrap.dcs` was written in (the same names as the dynamic configuration). */
  dcsDialect: ConfigDialect;
}

function getIn(doc: unknown, path: readonly string[]): unknown {
  let cur = doc;
  for (const k of path) {
    if (!isMapping(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/** Applies `op` to `doc` (mutated). A path that does not lead to a mapping is left alone. */
export function applyFileOp(doc: Doc, op: FileOp): void {
  const parent = getIn(doc, op.path.slice(0, -1));
  const key = op.path[op.path.length - 1]!;
  if (!isMapping(parent)) {
    if (op.op !== 'set') return;
    let cur: Doc = doc;
    for (const k of op.path.slice(0, -1)) {
      if (!isMapping(cur[k])) cur[k] = {};
      cur = cur[k] as Doc;
    }
    cur[key] = op.value;
    return;
  }
  if (op.op === 'delete') delete parent[key];
  else if (op.op === 'set') parent[key] = op.value;
  else if (Object.hasOwn(parent, key)) {
    // Keep the key's place among its siblings.
    const entries = Object.entries(parent).map(([k, v]) => [k === key ? op.to : k, v] as const);
    for (const k of Object.keys(parent)) delete parent[k];
    for (const [k, v] of entries) parent[k] = v;
  }
}

/** Mappings the reference reads as empty when YAML leaves them `null` (native paths). */
const EMPTY_MAPPINGS: readonly string[][] = [
  ['bootstrap'],
  ['bootstrap', 'dcs'],
  ['database', 'parameters'],
  ['database', 'callbacks'],
  ['tags'],
  ['watchdog'],
  ['log'],
  ['ctl'],
];

/** Sections walked for keys of the reference that are not implemented (native paths; `*`: every mapping-valued key). */
const WALKED: readonly string[][] = [
  [],
  ['restapi'],
  ['etcd3'],
  ['bootstrap'],
  ['bootstrap', '*'],
  ['database'],
  ['database', 'authentication'],
  ['database', 'authentication', '*'],
  ['database', 'recovery_conf'],
  ['watchdog'],
  ['log'],
];

/** Keys of `bootstrap` that are not custom methods. */
const BOOTSTRAP_OWN = ['dcs', 'method', 'initdb', 'pg_hba'];

function walkedSections(doc: Doc): string[][] {
  const out: string[][] = [];
  for (const pattern of WALKED) {
    const star = pattern.indexOf('*');
    if (star < 0) {
      if (isMapping(getIn(doc, pattern))) out.push([...pattern]);
      continue;
    }
    const parent = getIn(doc, pattern.slice(0, star));
    if (!isMapping(parent)) continue;
    for (const [k, v] of Object.entries(parent)) {
      if (!isMapping(v) || (pattern[0] === 'bootstrap' && BOOTSTRAP_OWN.includes(k))) continue;
      out.push([...pattern.slice(0, star), k]);
    }
  }
  return out;
}

/**
 * The file's path of the native `path`: `database` is `postgresql` in a file of the reference's
 * dialect, `bootstrap.dcs.database(.use_db_rewind)` is `bootstrap.dcs.postgresql(.use_pg_rewind)`
 * when `bootstrap.dcs` was written in it.
 */
export function filePath(path: readonly string[], dialect: ConfigDialect, dcsDialect: ConfigDialect): string[] {
  const out = [...path];
  if (out[0] === 'database' && dialect === 'patroni') out[0] = DIALECT_NAMES.patroni.section;
  if (out[0] === 'bootstrap' && out[1] === 'dcs' && out[2] === 'database' && dcsDialect === 'patroni') {
    out[2] = DIALECT_NAMES.patroni.section;
    if (out[3] === DIALECT_NAMES.native.rewind) out[3] = DIALECT_NAMES.patroni.rewind;
  }
  return out;
}

/**
 * A problem line `<native.path>: <problem>` named in the file's own names (in a file of the
 * reference's dialect, a problem of its `postgresql` section names the section's other keys
 * `postgresql.…` too: `set by postgresql.socket_dir`).
 */
export function fileProblem(problem: string, dialect: ConfigDialect, dcsDialect: ConfigDialect): string {
  const at = problem.indexOf(': ');
  if (at < 0 || problem.startsWith('(root)')) return problem;
  const path = problem.slice(0, at).split('.');
  const text =
    dialect === 'patroni' && path[0] === 'database' ? problem.slice(at).replace(/\bdatabase\./g, 'postgresql.') : problem.slice(at);
  return `${filePath(path, dialect, dcsDialect).join('.')}${text}`;
}

/**
 * The reference sets the socket directory as a parameter, `parameters.unix_socket_directories`
 * (its example: `'..'`, relative to data_dir, as PostgreSQL resolves it); ours is `socket_dir`,
 * where the agent also connects. In a file of the reference's dialect without `socket_dir`, one
 * directory given there becomes `socket_dir` (absolute, resolved against data_dir): our agent
 * then reaches the PostgreSQL the reference started through the same socket, and the parameter,
 * which needs a restart to change, keeps its value (issue 26, docs/migration.md). A list of
 * several directories is a problem (the agent listens on one); with `socket_dir` also given the
 * parameter is left to the cross-checks (`set by postgresql.socket_dir; remove it`).
 */
function socketDirOfReference(db: Doc): { dir?: string; problem?: string } {
  const params = db['parameters'];
  if (!isMapping(params) || db['socket_dir'] !== undefined) return {};
  const value = params['unix_socket_directories'];
  if (typeof value !== 'string') return {};
  const dirs = value
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  if (dirs.length !== 1) {
    return {
      problem: `database.parameters.unix_socket_directories: only one directory is implemented (it becomes socket_dir), got ${JSON.stringify(value)}`,
    };
  }
  const dataDir = db['data_dir'];
  if (!posix.isAbsolute(dirs[0]!) && typeof dataDir !== 'string') return {};
  return { dir: posix.resolve(typeof dataDir === 'string' ? dataDir : '/', dirs[0]!) };
}

/** What the phases of translateFile share: the document being translated, how an operation is applied, the problems found. */
interface Translation {
  doc: Doc;
  run: (op: FileOp) => void;
  problems: string[];
}

/** Phase 1: the section's name (`postgresql` → `database`); returns the file's dialect. */
function translateSectionName(raw: Doc, t: Translation): ConfigDialect {
  const { run, problems } = t;
  const written = writtenDialect(raw);
  if (written === 'both') {
    problems.push("(root): postgresql (the reference's name) and database name the same section: write one");
    run({ op: 'delete', path: ['postgresql'] });
  } else if (written === 'patroni') {
    run({ op: 'rename', path: ['postgresql'], to: 'database' });
  }
  return written === 'patroni' ? 'patroni' : 'native';
}

/** Phase 2: mappings written empty (`key:` with nothing under it) are dropped. */
function dropEmptyMappings(t: Translation): void {
  const { doc, run } = t;
  for (const path of EMPTY_MAPPINGS) {
    const parent = getIn(doc, path.slice(0, -1));
    if (isMapping(parent) && Object.hasOwn(parent, path[path.length - 1]!) && parent[path[path.length - 1]!] === null)
      run({ op: 'delete', path });
  }
}

/** Phase 3: bootstrap.dcs, its keys, then its dialect; returns that dialect. */
function translateBootstrapDcs(t: Translation): ConfigDialect {
  const { doc, run, problems } = t;
  let dcsDialect: ConfigDialect = 'native';
  // bootstrap.dcs: its keys, then its dialect.
  const dcs = getIn(doc, ['bootstrap', 'dcs']);
  if (isMapping(dcs)) {
    const dcsWritten = writtenDialect(dcs);
    if (dcsWritten === 'both') {
      problems.push("bootstrap.dcs: postgresql (the reference's name) and database name the same section: write one");
    } else {
      dcsDialect = dcsWritten === 'patroni' ? 'patroni' : 'native';
      const section = dcs[DIALECT_NAMES[dcsDialect].section];
      if (section === null) run({ op: 'delete', path: ['bootstrap', 'dcs', DIALECT_NAMES[dcsDialect].section] });
      else if (isMapping(section) && section['parameters'] === null)
        run({ op: 'delete', path: ['bootstrap', 'dcs', DIALECT_NAMES[dcsDialect].section, 'parameters'] });
      const current = getIn(doc, ['bootstrap', 'dcs']) as Doc;
      for (const u of unreadKeys(current)) {
        problems.push(`bootstrap.dcs.${formatUnread(u)}`);
        run({ op: 'delete', path: ['bootstrap', 'dcs', ...u.path] });
      }
      if (dcsDialect === 'patroni') {
        const before = getIn(doc, ['bootstrap', 'dcs']) as Doc;
        const after = convertDocument(before, 'patroni', 'native');
        const pg = before['postgresql'];
        run({ op: 'rename', path: ['bootstrap', 'dcs', 'postgresql'], to: 'database' });
        if (isMapping(pg) && Object.hasOwn(pg, DIALECT_NAMES.patroni.rewind)) {
          run({ op: 'rename', path: ['bootstrap', 'dcs', 'database', DIALECT_NAMES.patroni.rewind], to: DIALECT_NAMES.native.rewind });
        }
        const db = after['database'];
        if (isMapping(db)) {
          for (const [k, v] of Object.entries(db)) {
            if (getIn(doc, ['bootstrap', 'dcs', 'database', k]) === undefined)
              run({ op: 'set', path: ['bootstrap', 'dcs', 'database', k], value: v });
          }
        }
      }
    }
  }
  return dcsDialect;
}

/** Phase 4: keys of the reference implemented under another shape (etcd3.host, replica methods, unix sockets, the socket directory). */
function reshapeReferenceKeys(t: Translation, dialect: ConfigDialect): void {
  const { doc, run, problems } = t;
  // Keys of the reference implemented under another shape.
  const etcd3 = getIn(doc, ['etcd3']);
  if (isMapping(etcd3) && Object.hasOwn(etcd3, 'host')) {
    if (Object.hasOwn(etcd3, 'hosts')) problems.push('etcd3.host: give etcd3.hosts or etcd3.host, not both');
    else if (typeof etcd3['host'] === 'string') run({ op: 'set', path: ['etcd3', 'hosts'], value: [etcd3['host']] });
    else problems.push(`etcd3.host: must be one host:port string, got ${JSON.stringify(etcd3['host'])}`);
    run({ op: 'delete', path: ['etcd3', 'host'] });
  }
  const db = getIn(doc, ['database']);
  if (isMapping(db)) {
    // The reference's older name of create_replica_methods (docs/backups.md "Replica creation").
    if (Object.hasOwn(db, 'create_replica_method')) {
      if (Object.hasOwn(db, 'create_replica_methods'))
        problems.push('database.create_replica_method: give create_replica_methods or create_replica_method, not both');
      else run({ op: 'rename', path: ['database', 'create_replica_method'], to: 'create_replica_methods' });
      if (Object.hasOwn(db, 'create_replica_method')) run({ op: 'delete', path: ['database', 'create_replica_method'] });
    }
    for (const [key, always, why] of [
      ['use_unix_socket', true, 'the agent always connects to its PostgreSQL through the unix socket in socket_dir'],
      ['use_unix_socket_repl', false, "replicas always stream over TCP from the leader's connect_address"],
    ] as const) {
      if (!Object.hasOwn(db, key)) continue;
      if (db[key] !== always)
        problems.push(`database.${key}: only ${String(always)} is implemented: ${why}, got ${JSON.stringify(db[key])}`);
      run({ op: 'delete', path: ['database', key] });
    }
  }

  if (dialect === 'patroni' && isMapping(db)) {
    const socket = socketDirOfReference(db);
    if (socket.problem) problems.push(socket.problem);
    if (socket.dir !== undefined) run({ op: 'set', path: ['database', 'socket_dir'], value: socket.dir });
    if (socket.dir !== undefined || socket.problem) run({ op: 'delete', path: ['database', 'parameters', 'unix_socket_directories'] });
  }
}

/** Phase 5: keys of the reference not implemented are problems, and dropped. */
function dropUnimplemented(t: Translation): void {
  const { doc, run, problems } = t;
  // Keys of the reference not implemented.
  for (const section of walkedSections(doc)) {
    const s = getIn(doc, section);
    if (!isMapping(s)) continue; // dropped as a whole above (database.authentication.rewind)
    for (const key of Object.keys(s)) {
      const why = unimplementedWhy([...section, key]);
      if (why === undefined) continue;
      problems.push(`${[...section, key].join('.')}: ${why}`);
      run({ op: 'delete', path: [...section, key] });
    }
  }
}

/**
 * Translates a parsed member configuration file (either dialect) into the native document, with
 * the operations that did it and the problems found (module docstring). Never throws.
 */
export function translateFile(raw: Doc): FileTranslation {
  const doc = structuredClone(raw);
  const ops: FileOp[] = [];
  const problems: string[] = [];
  const t: Translation = {
    doc,
    problems,
    run: (op: FileOp) => {
      ops.push(op);
      applyFileOp(doc, op);
    },
  };
  const dialect = translateSectionName(raw, t);
  dropEmptyMappings(t);
  const dcsDialect = translateBootstrapDcs(t);
  reshapeReferenceKeys(t, dialect);
  dropUnimplemented(t);
  return { doc, ops, problems: problems.map((p) => fileProblem(p, dialect, dcsDialect)), dialect, dcsDialect };
}
