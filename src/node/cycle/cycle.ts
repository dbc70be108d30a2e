/**
 * One HA cycle (docs/ha.md "The cycle") in three stages: gather the facts (gather.ts: lease
 * keepalive, dynamic config, the leader lock, local status, peers), decide (decideCycle,
 * src/domain/ha-cycle.ts, pure), carry the actions out (executor.ts); then the scheduled
 * restart, the member key and the failsafe key.
 */
import type { Logger } from 'pino';
import type { Dcs } from '../../dcs/dcs.ts';
import { decideCycle, type CycleAction } from '../../domain/ha-cycle.ts';
import type { Failsafe } from '../lock/failsafe.ts';
import type { Fencing } from '../lock/fencing.ts';
import type { LeaderLock } from '../lock/leader-lock.ts';
import type { AdminCommands } from '../local/admin.ts';
import type { ReceiptKeeper } from '../local/receipts.ts';
import type { MemberKey } from '../member/member-key.ts';
import type { Executor } from './executor.ts';
import type { CycleGather } from './gather.ts';
import type { ScheduledWork } from './schedules.ts';

/** What the cycle reads and calls (HaNode wires it). */
export interface HaCycleDeps {
  /** This member's name. */
  name: string;
  log: Pick<Logger, 'info' | 'warn'>;
  dcs: Pick<Dcs, 'view'>;
  gather: Pick<CycleGather, 'collect' | 'afterDecision'>;
  executor: Pick<Executor, 'execute'>;
  admin: Pick<AdminCommands, 'runDueRestart'>;
  memberKey: Pick<MemberKey, 'publish'>;
  fencing: Pick<Fencing, 'sync' | 'primaryLaunchRefusal'>;
  lock: Pick<LeaderLock, 'untilMs'>;
  /** Epoch ms. */
  now(): number;
  /** Logs and journals a node notice (`lock.stale`). */
  notice(type: string, text: string): void;
  /** True once the loop is stopping: no further action is carried out. */
  stopped(): boolean;
  /** The scheduled switchover and restart machines (defined once the node started). */
  schedules(): Pick<ScheduledWork, 'switchoverFailed'> | undefined;
  failsafe?: Pick<Failsafe, 'afterCycle'>;
  receipts?: Pick<ReceiptKeeper, 'take'>;
}

/** One HA cycle: gather → decideCycle → the executor, then the cycle's tail (see the module comment). */
export class HaCycle {
  private lastMessage = '';

  constructor(private readonly deps: HaCycleDeps) {}

  /** Runs one cycle. Errors of single steps are logged; a failed DCS write rejects (the loop logs it). */
  async run(): Promise<void> {
    const d = this.deps;
    const g = await d.gather.collect();
    const decision = decideCycle(g.input);
    d.gather.afterDecision(decision, g);
    // Before a rewind or re-clone throws away local WAL, its receipt (docs/ha.md "Receipts").
    if (decision.discard && decision.actions.some((a) => a.kind === 'rewind' || a.kind === 'reinitialize')) {
      await d.receipts?.take(decision.discard);
    }
    for (const action of decision.actions) {
      if (d.stopped()) break;
      const refusal = this.launchRefusal(action);
      if (refusal !== undefined) {
        d.notice('lock.stale', `not carrying out '${decision.message}': ${refusal} (the cycle ran late)`);
        break;
      }
      await d.executor.execute(action, g.view);
    }
    if (decision.actions.some((a) => a.kind === 'clearFailover')) d.schedules()?.switchoverFailed(decision.message);
    void d.fencing.sync();
    await d.admin.runDueRestart();
    if (decision.message !== this.lastMessage) {
      d.log.info({ actions: decision.actions.map((a) => a.kind) }, decision.message);
      this.lastMessage = decision.message;
    }
    if (g.dcsOk) await d.memberKey.publish().catch((e) => d.log.warn({ err: String(e) }, 'publishing the member key failed'));
    if (g.dcsOk)
      await d.failsafe?.afterCycle(d.dcs.view()).catch((e) => d.log.warn({ err: String(e) }, 'updating the failsafe key failed'));
  }

  /**
   * Starting or promoting a primary on the lock needs the lock now, not when the facts were
   * gathered: a cycle that stalled in between (a stopped or late process) may hold a renewal
   * answer that is older than ttl (finding 15, docs/simulation.md). With a fence, the lock must
   * also outlast the fence's margin: past it the fence may have fired already, before the new
   * postmaster existed (finding 16; the launch itself checks again). The next cycle decides again.
   * Undefined: `action` may be carried out.
   */
  private launchRefusal(action: CycleAction): string | undefined {
    const d = this.deps;
    return needsLiveLock(action) ? d.fencing.primaryLaunchRefusal(true, d.lock.untilMs, d.now()) : undefined;
  }
}

/** Actions that make this member a writable primary on the strength of the leader lock. */
function needsLiveLock(action: CycleAction): boolean {
  return action.kind === 'promote' || (action.kind === 'start' && action.role === 'primary');
}
