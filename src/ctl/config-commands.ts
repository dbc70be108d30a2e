/**
 * `hactl show-config`, `hactl edit-config` and `hactl convert-config`: the DCS key `config` read
 * and written directly. edit-config checks the edited document as the API checks a change
 * (src/config/dynamic-change.ts: keys the agent does not read refused, keys already stored kept,
 * the stored dialect kept, types and timing), shows a unified diff of the YAML and the settings
 * that fall back to their defaults, asks unless `--force`, and writes it with compare-and-set on
 * the revision it read: a concurrent change aborts with `Config modification aborted due to
 * concurrent changes`. convert-config rewrites the document in the other dialect
 * (src/domain/config-dialect.ts) the same way.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convertStored, formatDefaulted, parameterProblems } from '../config/dynamic-change.ts';
import { DIALECT_NAMES, storedDialect, type ConfigDialect } from '../domain/config-dialect.ts';
import type { SettingsCatalogue } from '../domain/pg-parameters.ts';
import { applySettings, checkEditedConfig, configYaml, mergePatch, parseConfigText, sameConfig } from './config-edit.ts';
import { unifiedDiff } from './diff.ts';
import { CtlError, errorText, usageError } from './errors.ts';
import { confirm } from './io.ts';
import { readView, type Session } from './session.ts';

/** Runs `show-config`: the stored `config` as YAML (keys sorted). */
export async function runShowConfig(s: Session): Promise<void> {
  const view = await readView(s);
  if (!view.config) throw new CtlError(`cluster "${s.scope}" has no config key in the DCS`);
  s.io.out(configYaml(view.config.value).trimEnd());
}

/** Options of `edit-config`. */
export interface EditConfigOptions {
  set: string[];
  pg: string[];
  apply?: string;
  replace?: string;
  force: boolean;
  /** Reads `-` (stdin) for --apply/--replace. */
  readStdin?: () => Promise<string>;
  /** Editor command when no change option is given (default $EDITOR, else vi). */
  editor?: string;
  /**
   * The PostgreSQL settings catalogue the parameters are checked against, as PATCH/PUT /config
   * checks them (`parameterProblems`, src/config/dynamic-change.ts): hactl loads the local
   * server's (`postgres --describe-config`); undefined when there is none (the parameters are then
   * not checked, and hactl says so).
   */
  catalogue?: () => Promise<SettingsCatalogue | undefined>;
}

async function readSource(path: string, o: EditConfigOptions): Promise<string> {
  if (path === '-') {
    if (!o.readStdin) throw usageError('reading the configuration from stdin is not available');
    return o.readStdin();
  }
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    throw usageError(`cannot read ${path}: ${errorText(e)}`);
  }
}

/** Opens `text` in an editor; returns the edited text. */
function editInEditor(text: string, editor: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'hactl-'));
  const file = join(dir, 'config.yaml');
  try {
    writeFileSync(file, text);
    const r = spawnSync('sh', ['-c', `${editor} "$1"`, 'editor', file], { stdio: 'inherit' });
    if (r.status !== 0) throw new CtlError(`editor ${editor} exited with ${r.status ?? r.signal}`);
    return readFileSync(file, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `edit-config`. */
export async function runEditConfig(s: Session, o: EditConfigOptions): Promise<void> {
  if (o.apply !== undefined && o.replace !== undefined) throw usageError('--apply and --replace can not be used together');
  const view = await readView(s);
  if (!view.config) throw new CtlError(`cluster "${s.scope}" has no config key in the DCS`);
  const before = view.config.value;
  const revision = view.config.revision;
  let after = before;
  if (o.replace !== undefined) after = parseConfigText(await readSource(o.replace, o), o.replace);
  if (o.apply !== undefined) after = mergePatch(after, parseConfigText(await readSource(o.apply, o), o.apply));
  after = applySettings(after, o.set, o.pg);
  if (o.replace === undefined && o.apply === undefined && o.set.length === 0 && o.pg.length === 0) {
    // vi without a terminal waits for input that never comes (issue 30): refuse instead.
    if (o.editor === undefined && !process.env['EDITOR'] && !s.io.isTty) {
      throw usageError('edit-config: no change given (-s, -p, --apply, --replace), no $EDITOR, and no terminal to run vi in');
    }
    const editor = o.editor ?? (process.env['EDITOR'] || 'vi');
    after = parseConfigText(editInEditor(configYaml(before), editor), 'the edited configuration');
  }
  if (sameConfig(before, after)) {
    s.io.out('Not changed');
    return;
  }
  const checked = checkEditedConfig(before, after, o.replace !== undefined);
  if (!checked.ok) {
    for (const l of unifiedDiff(configYaml(before), configYaml(after))) s.io.out(l);
    throw new CtlError(`invalid configuration: ${checked.problems.join('; ')}`);
  }
  after = checked.document;
  if (sameConfig(before, after)) {
    s.io.out('Not changed');
    return;
  }
  // The parameters, against a server's catalogue: the check PATCH /config makes (issue 30).
  if (parametersChanged(before, after, checked.dialect)) {
    const catalogue = await o.catalogue?.();
    const problems = parameterProblems(checked, catalogue);
    if (problems.length) {
      for (const l of unifiedDiff(configYaml(before), configYaml(after))) s.io.out(l);
      throw new CtlError(`invalid configuration: ${problems.join('; ')}`);
    }
    if (!catalogue)
      s.io.err('note: no PostgreSQL binaries here to check the parameters against; the members drop the ones their server refuses');
  }
  for (const l of unifiedDiff(configYaml(before), configYaml(after))) s.io.out(l);
  if (checked.defaulted.length) s.io.out(`Falling back to their defaults: ${checked.defaulted.map(formatDefaulted).join('; ')}`);
  if (!o.force && !(await confirm(s.io, 'Apply these changes?'))) throw new CtlError('Aborting edit-config: configuration not changed');
  await writeConfig(s, after, revision);
  s.io.out('Configuration changed');
}

/** Writes `doc` with compare-and-set on `revision`; CtlError on failure or a concurrent change. */
async function writeConfig(s: Session, doc: Record<string, unknown>, revision: string): Promise<void> {
  let written: boolean;
  try {
    written = await s.dcs.setConfig(doc, revision);
  } catch (e) {
    throw new CtlError(`could not write the config key: ${errorText(e)}`);
  }
  if (!written) throw new CtlError('Config modification aborted due to concurrent changes');
}

/** The dialects `convert-config` takes. */
export const CONFIG_DIALECTS: readonly ConfigDialect[] = ['native', 'patroni'];

/**
 * Runs `convert-config <dialect>`: the stored document rewritten in `to` so that it means the
 * same (`postgresql` ↔ `database`, `use_pg_rewind` ↔ `use_db_rewind`, the defaults that differ
 * between the dialects written out); shows the diff, asks unless `force`, compare-and-set write.
 * Prints `Already in the <dialect> dialect` when there is nothing to do.
 */
export async function runConvertConfig(s: Session, to: ConfigDialect, force: boolean): Promise<void> {
  const view = await readView(s);
  if (!view.config) throw new CtlError(`cluster "${s.scope}" has no config key in the DCS`);
  const before = view.config.value;
  const after = convertStored(before, to);
  if (after === undefined) {
    s.io.out(`Already in the ${to} dialect`);
    return;
  }
  for (const l of unifiedDiff(configYaml(before), configYaml(after))) s.io.out(l);
  const from = storedDialect(before);
  if (!force && !(await confirm(s.io, `Convert the configuration of cluster ${s.scope} from the ${from} to the ${to} dialect?`))) {
    throw new CtlError('Aborting convert-config: configuration not changed');
  }
  await writeConfig(s, after, view.config.revision);
  s.io.out(`Configuration converted to the ${to} dialect`);
}

/** True when the edit changed the database section's `parameters`. */
function parametersChanged(before: Record<string, unknown>, after: Record<string, unknown>, dialect: ConfigDialect): boolean {
  const section = DIALECT_NAMES[dialect].section;
  const of = (d: Record<string, unknown>) => JSON.stringify((d[section] as Record<string, unknown> | undefined)?.['parameters'] ?? {});
  return of(before) !== of(after);
}
