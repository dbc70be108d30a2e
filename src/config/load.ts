/**
 * Reading the configuration once at start: YAML text (file, or HA_CONFIGURATION /
 * PATRONI_CONFIGURATION when no file is given) -> either dialect translated to the native form
 * (src/config/local-dialect.ts: ours, or the reference's `patroni.yml`) -> environment overrides
 * (`HA_*`, `PATRONI_*`) -> valibot -> cross-key rules -> AgentConfig. Any problem ends in one
 * ConfigError listing all of them, named in the file's own names.
 */
import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import YAML from 'yaml';
import { withDefaults } from '../domain/dynamic-config.ts';
import { writtenDialect, type ConfigDialect } from '../domain/config-dialect.ts';
import type { AgentConfig, CustomBootstrapMethod } from './agent-config.ts';
import type { CallbackName } from './command-line.ts';
import { ConfigError } from './config-error.ts';
import { crossCheck, defaultSocketDir } from './cross-checks.ts';
import { applyEnvOverrides, nameSource } from './env.ts';
import { normalizeInitdbOptions } from './initdb.ts';
import { formatIssues } from './issues.ts';
import { fileProblem, translateFile, type FileTranslation } from './local-dialect.ts';
import { FileSchema, fileKeysAt, type FileConfig } from './schema.ts';
import { unknownKeyProblem } from './suggest.ts';
import { DYNAMIC_TOP_KEYS } from './dynamic-keys.ts';
import { BUILTIN_REPLICA_METHOD, type ReplicaMethodConfig } from './archive-keys.ts';

/**
 * Reads and validates the configuration.
 * - `path` given: reads that file (HA_CONFIGURATION is then ignored);
 * - `path` undefined: uses `env.HA_CONFIGURATION` as the YAML text, or nothing at all (every
 *   required key must then come from the environment).
 * Environment overrides (env.ts) win over the text.
 * Errors: throws ConfigError when the file cannot be read, the YAML is malformed (each error
 * with line and column), or any value is invalid (every problem listed).
 */
export async function loadConfig(path: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<AgentConfig> {
  if (path === undefined) {
    const ha = env['HA_CONFIGURATION'] || undefined;
    const patroni = env['PATRONI_CONFIGURATION'] || undefined;
    if (ha !== undefined && patroni !== undefined && ha !== patroni) {
      throw new ConfigError('environment', [
        '(root): HA_CONFIGURATION and PATRONI_CONFIGURATION are both set, to different documents; unset one',
      ]);
    }
    const text = ha ?? patroni;
    return text !== undefined
      ? parseConfig(text, env, ha !== undefined ? 'HA_CONFIGURATION' : 'PATRONI_CONFIGURATION')
      : parseConfig('', env, 'environment');
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // Node's message already starts with the code ("ENOENT: no such file or directory, open …").
    const why = e.code && !e.message.startsWith(`${e.code}:`) ? `${e.code}: ${e.message}` : e.message;
    throw new ConfigError(path, [`${path}: cannot read the file (${why})`], { cause: err });
  }
  return parseConfig(text, env, path);
}

/**
 * Validates YAML text with environment overrides; `source` names the text in messages
 * (a file path, `HA_CONFIGURATION`). Empty text is an empty document.
 * Errors: throws ConfigError as {@link loadConfig} does.
 */
export function parseConfig(yamlText: string, env: NodeJS.ProcessEnv = process.env, source = 'configuration'): AgentConfig {
  return checkConfigText(yamlText, env, source).config;
}

/** What {@link checkConfigText} found: the configuration and the dialects the text was written in. */
export interface CheckedConfig {
  config: AgentConfig;
  /** `patroni` for a file of the reference (`postgresql:`), else `native`. */
  dialect: ConfigDialect;
  /** The dialect of `bootstrap.dcs` (`postgresql: {use_pg_rewind, …}` is `patroni`). */
  dcsDialect: ConfigDialect;
}

/**
 * Reads YAML text of either dialect (src/config/local-dialect.ts) the way {@link parseConfig}
 * does, and says which dialect it was. A file of the reference's dialect is read as the reference
 * reads it: YAML 1.1 (PyYAML), so `on`, `off`, `yes`, `no` are booleans there.
 * Errors: throws ConfigError listing every problem, named in the text's own names.
 */
export function checkConfigText(yamlText: string, env: NodeJS.ProcessEnv = process.env, source = 'configuration'): CheckedConfig {
  const t = readFileDocument(yamlText, source);
  const overlay = applyEnvOverrides(t.doc, env);
  const result = v.safeParse(FileSchema, overlay.doc);
  const native = [...(result.success ? [] : formatIssues(result.issues).map(withSuggestion)), ...crossCheck(overlay.doc)].map((p) =>
    fileProblem(nameSource(p, overlay.sources), t.dialect, t.dcsDialect),
  );
  const problems = [...t.problems, ...overlay.problems.map((p) => nameSource(p, overlay.sources)), ...native];
  if (!result.success || problems.length > 0) throw new ConfigError(source, [...new Set(problems)]);
  return { config: toAgentConfig(result.output), dialect: t.dialect, dcsDialect: t.dcsDialect };
}

/**
 * Parses YAML text of either dialect and translates it to the native document
 * (src/config/local-dialect.ts `translateFile`; its problems are not thrown, they are in the
 * result). Errors: throws ConfigError for YAML syntax errors or a text that is not a mapping.
 */
export function readFileDocument(yamlText: string, source: string): FileTranslation {
  let raw = parseYaml(yamlText, source, '1.2');
  if (writtenDialect(raw) === 'patroni') raw = parseYaml(yamlText, source, '1.1');
  return translateFile(raw);
}

/**
 * `<path>: unknown key` with the closest key the schema knows at that place suggested; a
 * dynamic setting written at the top level is told where it belongs.
 */
function withSuggestion(problem: string): string {
  if (!problem.endsWith(': unknown key')) return problem;
  const path = problem.slice(0, -': unknown key'.length).split('.');
  const key = path[path.length - 1]!;
  if (path.length === 1 && DYNAMIC_TOP_KEYS.includes(key)) {
    return `${key}: a setting of the dynamic configuration: set it in bootstrap.dcs for a new cluster, or change the cluster's with PATCH /config or hactl edit-config`;
  }
  const known = fileKeysAt(path.slice(0, -1));
  return known ? `${path.join('.')}: ${unknownKeyProblem(key, path.length === 1 ? [...known, 'postgresql'] : known)}` : problem;
}

/** PyYAML's booleans (the reference's parser): `yes`, `on`, `true` and their opposites, in three cases; not `y`/`n`. */
const PYYAML_BOOLEANS: Readonly<Record<string, RegExp>> = {
  true: /^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$/,
  false: /^(?:no|No|NO|false|False|FALSE|off|Off|OFF)$/,
};

/**
 * Options to parse YAML 1.1 as the reference does (PyYAML's `safe_load`): the `yaml` package's
 * 1.1 schema, whose booleans are narrowed to PyYAML's (it also reads `y` and `n` as booleans, so
 * a member named `n` would be `false`).
 */
export const REFERENCE_YAML: YAML.DocumentOptions & YAML.SchemaOptions = {
  version: '1.1',
  customTags: (tags) =>
    tags.map((t) => {
      if (typeof t !== 'object' || !('tag' in t) || t.tag !== 'tag:yaml.org,2002:bool' || !('test' in t) || !(t.test instanceof RegExp))
        return t;
      return { ...t, test: t.test.test('yes') ? PYYAML_BOOLEANS['true']! : PYYAML_BOOLEANS['false']! } as typeof t;
    }),
};

function parseYaml(text: string, source: string, version: '1.1' | '1.2'): Record<string, unknown> {
  const doc = YAML.parseDocument(text, { prettyErrors: true, ...(version === '1.1' ? REFERENCE_YAML : { version }) });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => {
        const at = e.linePos?.[0];
        const where = at ? `${source}:${at.line}:${at.col}` : source;
        const text = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
        return `${where}: YAML ${e.code}: ${text}`;
      }),
    );
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(source, [
      `(root): the configuration must be a mapping of sections, got ${Array.isArray(value) ? 'a list' : typeof value}`,
    ]);
  }
  return value as Record<string, unknown>;
}

/** The etcd3 section with `protocol` filled: https when a CA or client certificate is given. */
function etcd3Of(e: FileConfig['etcd3']): AgentConfig['etcd3'] {
  if (e.protocol !== undefined || (e.cacert === undefined && e.cert === undefined)) return e;
  return { ...e, protocol: 'https' };
}

/** The callbacks that are set (keys given as `null`/absent dropped). */
function definedCallbacks(c: Partial<Record<CallbackName, string[] | undefined>>): Partial<Record<CallbackName, string[]>> {
  const out: Partial<Record<CallbackName, string[]>> = {};
  for (const [k, v] of Object.entries(c)) if (v !== undefined) out[k as CallbackName] = v;
  return out;
}

/** `create_replica_methods` (default `[basebackup]`) and the sections of the methods it names. */
function replicaMethodsOf(db: FileConfig['database']): Pick<AgentConfig['database'], 'create_replica_methods' | 'replica_methods'> {
  const list = db.create_replica_methods ?? [BUILTIN_REPLICA_METHOD];
  const sections: Record<string, ReplicaMethodConfig> = {};
  for (const m of list) {
    const s = (db as Record<string, unknown>)[m];
    if (m !== BUILTIN_REPLICA_METHOD && typeof s === 'object' && s !== null) sections[m] = s as ReplicaMethodConfig;
  }
  return { create_replica_methods: list, replica_methods: sections };
}

/** Fills the derived fields; the input has passed the schema and the cross-key rules. */
/** `watchdog.safety_margin` when the file does not set it (the reference's default), seconds. */
const DEFAULT_SAFETY_MARGIN = 5;

/** The `watchdog` section: the default margin filled in, and whether the file wrote one (an adjustment of the default is no warning). */
function watchdogOf(w: FileConfig['watchdog']): AgentConfig['watchdog'] {
  return {
    mode: w.mode,
    safety_margin: w.safety_margin ?? DEFAULT_SAFETY_MARGIN,
    ...(w.safety_margin !== undefined ? { safety_margin_set: true as const } : {}),
  };
}

function toAgentConfig(f: FileConfig): AgentConfig {
  const { dcs, method, initdb, pg_hba, ...custom } = f.bootstrap;
  const db = f.database;
  return {
    scope: f.scope,
    namespace: `/${f.namespace}/`.replace(/\/+/g, '/'),
    name: f.name,
    restapi: { ...f.restapi, connect_address: f.restapi.connect_address ?? f.restapi.listen },
    etcd3: etcd3Of(f.etcd3),
    ...(f.ctl !== undefined ? { ctl: f.ctl } : {}),
    bootstrap: {
      dcs: withDefaults(dcs),
      method,
      initdb: normalizeInitdbOptions(initdb),
      pg_hba,
      methods: custom as Record<string, CustomBootstrapMethod>,
    },
    database: {
      listen: db.listen,
      connect_address: db.connect_address ?? db.listen,
      data_dir: db.data_dir,
      ...(db.bin_dir !== undefined ? { bin_dir: db.bin_dir } : {}),
      socket_dir: db.socket_dir ?? defaultSocketDir(db.data_dir, f.name),
      ...(db.pgpass !== undefined ? { pgpass: db.pgpass } : {}),
      authentication: db.authentication,
      parameters: db.parameters,
      pg_hba: db.pg_hba,
      ...(db.callbacks !== undefined ? { callbacks: definedCallbacks(db.callbacks) } : {}),
      ...replicaMethodsOf(db),
      recovery_conf: db.recovery_conf ?? {},
    },
    ...(f.backup !== undefined ? { backup: f.backup } : {}),
    tags: f.tags,
    watchdog: watchdogOf(f.watchdog),
    log: { level: f.log.level },
  };
}
