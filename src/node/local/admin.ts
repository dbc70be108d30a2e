/**
 * The node's admin commands (POST /restart, /reinitialize, scheduled restarts): each checks the
 * node's own facts, then sends the database machine a command. The HTTP layer reaches them
 * through src/node/agent/commands.ts.
 */
import { waitOn } from '../clock.ts';
import { cloneSource } from '../../domain/ha-cycle.ts';
import type { ScheduledRestartData } from '../../domain/member.ts';
import { restartConditionsHold } from '../../domain/restart-conditions.ts';
import { isBusy } from './busy.ts';
import type { MemberKey } from '../member/member-key.ts';
import type { NodeCore } from '../node-core.ts';
import type { ReceiptKeeper } from './receipts.ts';

/** The outcome of an admin command. */
export type AdminOutcome = { ok: true } | { ok: false; reason: string };

export class AdminCommands {
  constructor(
    private readonly core: NodeCore,
    private readonly memberKey: MemberKey,
    private readonly receipts?: ReceiptKeeper,
  ) {}

  /** Restarts the local database now (POST /restart); resolves when it runs again or failed (timeout default 60 s). */
  async restartNow(timeoutMs?: number): Promise<AdminOutcome> {
    const db = this.core.db();
    const s = db.getSnapshot();
    if (s.value !== 'running') return { ok: false, reason: `${s.value === 'restarting' ? 'restart' : String(s.value)} already in progress` };
    db.send({ type: 'cmd.restart', reason: 'restart requested through the API', at: this.core.now() });
    try {
      const end = await waitOn(this.core.deps.clock, db, (x) => x.value === 'running' || x.value === 'restart_failed', timeoutMs ?? 60_000);
      return end.value === 'running' ? { ok: true } : { ok: false, reason: 'restart failed' };
    } catch {
      return { ok: false, reason: 'restart failed' };
    }
  }

  /** Schedules a restart (kept in the member key); false when one is already scheduled. */
  async scheduleRestart(plan: ScheduledRestartData): Promise<boolean> {
    if (!this.core.schedules()?.scheduleRestart(plan)) return false;
    await this.memberKey.publish().catch(() => undefined);
    return true;
  }

  /** Cancels the scheduled restart; false when none. */
  async cancelRestart(): Promise<boolean> {
    if (!this.core.schedules()?.cancelRestart()) return false;
    await this.memberKey.publish().catch(() => undefined);
    return true;
  }

  /** Carries out a scheduled restart whose instant has come, when its conditions hold. */
  async runDueRestart(): Promise<void> {
    const schedules = this.core.schedules();
    const req = schedules?.dueRestart();
    if (!schedules || !req) return;
    const p = this.core.probe();
    const role = this.core.db().getSnapshot().context.role;
    const held = restartConditionsHold(req, {
      role: role === 'primary' ? 'primary' : 'replica',
      serverVersion: p?.serverVersion ?? 0,
      pendingRestart: !!p && Object.keys(p.pendingRestart).length > 0,
    });
    const outcome = held.ok ? await this.restartNow(req.timeoutSeconds !== undefined ? req.timeoutSeconds * 1000 : undefined) : held;
    this.core.deps.log.info({ outcome }, outcome.ok ? 'scheduled restart done' : `scheduled restart not done: ${outcome.reason}`);
    schedules.restartFinished(outcome);
    await this.memberKey.publish().catch(() => undefined);
  }

  /** Wipes the data directory and re-clones from the leader (POST /reinitialize). */
  async reinitialize(opts: { force: boolean; fromLeader: boolean }): Promise<AdminOutcome> {
    const { core } = this;
    const view = core.deps.dcs.view();
    if (core.lock.held || view.leader?.name === core.deps.name) return { ok: false, reason: 'I am the leader, can not reinitialize' };
    if (!view.leader) return { ok: false, reason: 'Cluster has no leader, can not reinitialize' };
    const db = core.db();
    const s = db.getSnapshot();
    if (isBusy(String(s.value)) && !opts.force) return { ok: false, reason: `${String(s.value)} already in progress` };
    const from = opts.fromLeader ? view.leader.name : (cloneSource(view, core.deps.name) ?? view.leader.name);
    const plan = core.trackers.facts.discardPlan;
    // A stopped member whose WAL diverged: the receipt of what the re-clone throws away, first.
    if (plan && s.value !== 'running') await this.receipts?.take({ ...plan, action: 'reinitialize' });
    core.source.reinitializeFrom(view, from, view.leader.name);
    db.send({ type: 'cmd.reinitialize', reason: `reinitialize requested through the API (from ${from})`, at: core.now() });
    return { ok: true };
  }
}
