/**
 * `hactl show-config` and `hactl edit-config`: the DCS key `config` read and written directly.
 * edit-config shows a unified diff of the YAML, asks unless `--force`, validates the document
 * and writes it with compare-and-set on the revision it read: a concurrent change aborts with
 * `Config modification aborted due to concurrent changes`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applySettings, configProblems, configYaml, mergePatch, parseConfigText, sameConfig } from './config-edit.ts';
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
  for (const l of unifiedDiff(configYaml(before), configYaml(after))) s.io.out(l);
  const problems = configProblems(after);
  if (problems) throw new CtlError(`invalid configuration: ${problems.join('; ')}`);
  if (!o.force && !(await confirm(s.io, 'Apply these changes?'))) throw new CtlError('Aborting edit-config: configuration not changed');
  let written: boolean;
  try {
    written = await s.dcs.setConfig(after, revision);
  } catch (e) {
    throw new CtlError(`could not write the config key: ${errorText(e)}`);
  }
  if (!written) throw new CtlError('Config modification aborted due to concurrent changes');
  s.io.out('Configuration changed');
}
