/**
 * `hactl demote-cluster` and `hactl promote-cluster` (patroni.md §5, §3.4 mode demote-cluster):
 * add or remove `standby_cluster` in the DCS key `config`, with compare-and-set on the revision
 * read (a concurrent change aborts). demote-cluster makes the cluster a standby cluster of the
 * remote `--host:--port` and/or its archive (`--restore-command`): its primary stops and restarts as the standby leader, keeping the
 * leader lock; promote-cluster removes the section: the standby leader is promoted. `--wait`
 * polls the leader's member key until its role shows the change. docs/ha.md "Standby cluster".
 */
import { timingOf, withDefaults } from '../domain/dynamic-config.ts';
import { standbyClusterOf } from '../domain/standby-cluster.ts';
import { checkEditedConfig } from './config-edit.ts';
import { CtlError, errorText, usageError } from './errors.ts';
import { confirm } from './io.ts';
import { readView, type Session } from './session.ts';

/** Options of `demote-cluster`. */
export interface DemoteClusterOptions {
  host?: string;
  port?: string;
  primarySlotName?: string;
  restoreCommand?: string;
  force: boolean;
  wait: boolean;
  waitTimeoutMs?: number;
}

/**
 * Runs `demote-cluster`: writes `standby_cluster` {host, port, restore_command, …} into `config`.
 * @throws CtlError (usage) without --host and --restore-command, or with a bad --port.
 */
export async function runDemoteCluster(s: Session, o: DemoteClusterOptions): Promise<void> {
  if (!o.host && !o.restoreCommand)
    throw usageError('demote-cluster needs --host (the remote primary to replicate from), --restore-command (its WAL archive), or both');
  let port: number | undefined;
  if (o.port !== undefined) {
    port = Number(o.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw usageError(`invalid --port ${JSON.stringify(o.port)}: expected 1..65535`);
  }
  const view = await readView(s);
  if (!view.config) throw new CtlError(`cluster "${s.scope}" has no config key in the DCS`);
  if (standbyClusterOf(view.config.value)) throw new CtlError('Cluster is already in standby mode');
  const section = {
    ...(o.host !== undefined ? { host: o.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(o.primarySlotName !== undefined ? { primary_slot_name: o.primarySlotName } : {}),
    ...(o.restoreCommand !== undefined ? { restore_command: o.restoreCommand } : {}),
  };
  const checked = checkEditedConfig(view.config.value, { ...view.config.value, standby_cluster: section }, false);
  if (!checked.ok) throw new CtlError(`invalid configuration: ${checked.problems.join('; ')}`);
  const after = checked.document;
  const target = o.host !== undefined ? `${o.host}:${port ?? 5432}` : 'its WAL archive (restore_command)';
  if (!o.force && !(await confirm(s.io, `Demote cluster ${s.scope}: its leader becomes a standby leader replicating from ${target}?`))) {
    throw new CtlError('Aborted: cluster not demoted');
  }
  await write(s, after, view.config.revision);
  s.io.out(`Success: cluster ${s.scope} is a standby cluster of ${target}`);
  if (o.wait) await waitForLeaderRole(s, 'standby_leader', o.waitTimeoutMs);
}

/** Runs `promote-cluster`: removes `standby_cluster` from `config`. */
export async function runPromoteCluster(s: Session, o: { force: boolean; wait: boolean; waitTimeoutMs?: number }): Promise<void> {
  const view = await readView(s);
  if (!view.config) throw new CtlError(`cluster "${s.scope}" has no config key in the DCS`);
  const before = view.config.value;
  if (!Object.hasOwn(before, 'standby_cluster') || before['standby_cluster'] === null) throw new CtlError('Cluster is not in standby mode');
  if (!o.force && !(await confirm(s.io, `Promote cluster ${s.scope}: its standby leader becomes a primary accepting writes?`))) {
    throw new CtlError('Aborted: cluster not promoted');
  }
  const after = { ...before };
  delete after['standby_cluster'];
  await write(s, after, view.config.revision);
  s.io.out(`Success: cluster ${s.scope} is being promoted`);
  if (o.wait) await waitForLeaderRole(s, 'primary', o.waitTimeoutMs);
}

async function write(s: Session, doc: Record<string, unknown>, revision: string): Promise<void> {
  let written: boolean;
  try {
    written = await s.dcs.setConfig(doc, revision);
  } catch (e) {
    throw new CtlError(`could not write the config key: ${errorText(e)}`);
  }
  if (!written) throw new CtlError('Config modification aborted due to concurrent changes');
}

/** Polls until the leader's member key shows `role` running (or the timeout). */
async function waitForLeaderRole(s: Session, role: 'standby_leader' | 'primary', timeoutMs?: number): Promise<void> {
  const first = await readView(s);
  const config = withDefaults(first.config?.value);
  const t = timingOf(config);
  const deadline = s.now() + (timeoutMs ?? Math.max(60_000, 3 * t.loopWaitMs + t.ttlMs));
  s.io.out(`Waiting for the leader to run as ${role} ...`);
  for (;;) {
    const v = await readView(s);
    const leader = v.members.find((m) => m.name === v.leader?.name);
    if (leader && leader.data.role === role && leader.data.state === 'running') {
      s.io.out(`Success: ${leader.name} runs as ${role}`);
      return;
    }
    if (s.now() > deadline) throw new CtlError(`Timed out waiting for the leader to run as ${role}`);
    await s.sleep(500);
  }
}
