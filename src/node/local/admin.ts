/**
 * The node's admin commands (POST /restart, /reinitialize, scheduled restarts): each checks the
 * node's own facts, then sends the database machine a command. The HTTP layer reaches them
 * through src/node/agent/commands.ts.
 */
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import { cloneSource } from '../../domain/ha-cycle.ts';
import type { ScheduledRestartData } from '../../domain/member.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import { restartConditionsHold, restartTimeoutMs } from '../../domain/restart-conditions.ts';
import { waitOn, type Clock } from '../clock.ts';
import type { CycleFacts } from '../cycle/trackers.ts';
import type { ScheduledWork } from '../cycle/schedules.ts';
import type { LeaderLock } from '../lock/leader-lock.ts';
import type { MemberKey } from '../member/member-key.ts';
import type { DatabaseActor } from '../node-core.ts';
import type { ReplicationSource } from '../replication/replication-source.ts';
import { isBusy } from './busy.ts';
import type { ReceiptKeeper } from './receipts.ts';

/** The outcome of an admin command. */
export type AdminOutcome = { ok: true } | { ok: false; reason: string };

/** What the admin commands read and call (HaNode wires them). */
export interface AdminDeps {
  /** This member's name. */
  name: string;
  dcs: Pick<Dcs, 'view'>;
  log: Pick<Logger, 'info'>;
  clock: Clock;
  lock: Pick<LeaderLock, 'held'>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseActor;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** Epoch ms. */
  now(): number;
  /** The scheduled machines (defined once the node started). */
  schedules(): Pick<ScheduledWork, 'scheduleRestart' | 'cancelRestart' | 'dueRestart' | 'restartFinished'> | undefined;
  memberKey: Pick<MemberKey, 'publish'>;
  source: Pick<ReplicationSource, 'reinitializeFrom'>;
  /** The cycle's facts: the discard plan of a diverged, stopped data directory. */
  facts: Pick<CycleFacts, 'discardPlan'>;
  receipts?: Pick<ReceiptKeeper, 'take'>;
}

/** The API's commands on the local database: restart, scheduled restart, reinitialize. */
export class AdminCommands {
  constructor(private readonly d: AdminDeps) {}

  /** Restarts the local database now (POST /restart); resolves when it runs again or failed (timeout default 60 s). */
  async restartNow(timeoutMs?: number): Promise<AdminOutcome> {
    const db = this.d.db();
    const s = db.getSnapshot();
    if (s.value !== 'running')
      return { ok: false, reason: `${s.value === 'restarting' ? 'restart' : String(s.value)} already in progress` };
    db.send({ type: 'cmd.restart', reason: 'restart requested through the API', at: this.d.now() });
    try {
      const end = await waitOn(this.d.clock, db, (x) => x.value === 'running' || x.value === 'restart_failed', timeoutMs ?? 60_000);
      return end.value === 'running' ? { ok: true } : { ok: false, reason: 'restart failed' };
    } catch {
      return { ok: false, reason: 'restart failed' };
    }
  }

  /** Schedules a restart (kept in the member key); false when one is already scheduled. */
  async scheduleRestart(plan: ScheduledRestartData): Promise<boolean> {
    if (!this.d.schedules()?.scheduleRestart(plan)) return false;
    await this.d.memberKey.publish().catch(() => undefined);
    return true;
  }

  /** Cancels the scheduled restart; false when none. */
  async cancelRestart(): Promise<boolean> {
    if (!this.d.schedules()?.cancelRestart()) return false;
    await this.d.memberKey.publish().catch(() => undefined);
    return true;
  }

  /** Carries out a scheduled restart whose instant has come, when its conditions hold. */
  async runDueRestart(): Promise<void> {
    const schedules = this.d.schedules();
    const req = schedules?.dueRestart();
    if (!schedules || !req) return;
    const p = this.d.probe();
    const role = this.d.db().getSnapshot().context.role;
    const held = restartConditionsHold(req, {
      role: role === 'primary' ? 'primary' : 'replica',
      serverVersion: p?.serverVersion ?? 0,
      pendingRestart: !!p && Object.keys(p.pendingRestart).length > 0,
    });
    const outcome = held.ok ? await this.restartNow(restartTimeoutMs(req)) : held;
    this.d.log.info({ outcome }, outcome.ok ? 'scheduled restart done' : `scheduled restart not done: ${outcome.reason}`);
    schedules.restartFinished(outcome);
    await this.d.memberKey.publish().catch(() => undefined);
  }

  /** Wipes the data directory and re-clones from the leader (POST /reinitialize). */
  async reinitialize(opts: { force: boolean; fromLeader: boolean }): Promise<AdminOutcome> {
    const core = this.d;
    const view = core.dcs.view();
    if (core.lock.held || view.leader?.name === core.name) return { ok: false, reason: 'I am the leader, can not reinitialize' };
    if (!view.leader) return { ok: false, reason: 'Cluster has no leader, can not reinitialize' };
    const db = core.db();
    const s = db.getSnapshot();
    if (isBusy(String(s.value)) && !opts.force) return { ok: false, reason: `${String(s.value)} already in progress` };
    // A state without a reinitialize transition (e.g. `starting`, forced) would drop the command
    // while the API answered 200: refuse it instead.
    const event = { type: 'cmd.reinitialize' as const, reason: 'reinitialize requested through the API', at: core.now() };
    if (!s.can(event)) return { ok: false, reason: `${String(s.value)} can not be interrupted by a reinitialize: try again when it ends` };
    const from = opts.fromLeader ? view.leader.name : (cloneSource(view, core.name) ?? view.leader.name);
    const plan = core.facts.discardPlan;
    // A stopped member whose WAL diverged: the receipt of what the re-clone throws away, first.
    if (plan && s.value !== 'running') await core.receipts?.take({ ...plan, action: 'reinitialize' });
    core.source.reinitializeFrom(view, from, view.leader.name, opts.fromLeader);
    db.send({ ...event, reason: `reinitialize requested through the API (from ${from})` });
    return { ok: true };
  }
}
