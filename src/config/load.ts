/**
 * Reading the configuration once at start: YAML text (file, or HA_CONFIGURATION when no file
 * is given) -> environment overrides -> valibot -> cross-key rules -> AgentConfig. Any problem
 * ends in one ConfigError listing all of them.
 */
import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import YAML from 'yaml';
import { withDefaults } from '../domain/dynamic-config.ts';
import type { AgentConfig, CustomBootstrapMethod } from './agent-config.ts';
import type { CallbackName } from './command-line.ts';
import { ConfigError } from './config-error.ts';
import { crossCheck, defaultSocketDir } from './cross-checks.ts';
import { applyEnvOverrides, nameSource } from './env.ts';
import { normalizeInitdbOptions } from './initdb.ts';
import { formatIssues } from './issues.ts';
import { FileSchema, type FileConfig } from './schema.ts';

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
    const text = env['HA_CONFIGURATION'];
    return text !== undefined && text !== ''
      ? parseConfig(text, env, 'HA_CONFIGURATION')
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
  const raw = parseYaml(yamlText, source);
  const overlay = applyEnvOverrides(raw, env);
  const result = v.safeParse(FileSchema, overlay.doc);
  const problems = [
    ...overlay.problems,
    ...(result.success ? [] : formatIssues(result.issues)),
    ...crossCheck(overlay.doc),
  ].map((p) => nameSource(p, overlay.sources));
  if (!result.success || problems.length > 0) throw new ConfigError(source, [...new Set(problems)]);
  return toAgentConfig(result.output);
}

function parseYaml(text: string, source: string): Record<string, unknown> {
  const doc = YAML.parseDocument(text, { prettyErrors: true });
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

/** Fills the derived fields; the input has passed the schema and the cross-key rules. */
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
      authentication: db.authentication,
      parameters: db.parameters,
      pg_hba: db.pg_hba,
      ...(db.callbacks !== undefined ? { callbacks: definedCallbacks(db.callbacks) } : {}),
    },
    tags: f.tags,
    watchdog: { mode: f.watchdog.mode, safety_margin: f.watchdog.safety_margin },
    log: { level: f.log.level },
  };
}
