/**
 * DCS failsafe mode on the node (patroni.md §3.7, §1.9; rules in src/domain/failsafe.ts):
 * - leader, DCS reachable: keeps the `failsafe` key = {name: api_url} of every member current;
 * - leader, DCS unreachable, `failsafe_mode: true`: POSTs {name, conn_url, api_url, slots} to every
 *   other member the key lists (2 s, one retry, never past the leader's deadline) and stays
 *   primary only while ALL answer 200 `Accepted` (src/node/lock/leader-deadline.ts then moves the
 *   deadline); otherwise decideCycle demotes as without failsafe;
 * - replica: POST /failsafe accepted for ttl: the sender is the leader (no leader race meanwhile),
 *   `/ha` shows `failsafe_mode_is_active` and /readiness counts a DCS-less replica as ready.
 */
import {
  answerFailsafe,
  failsafeKeyAction,
  failsafeTargets,
  failsafeUrl,
  type FailsafeAnswer,
  type FailsafeRequest,
} from '../../domain/failsafe.ts';
import type { ClusterView } from '../../domain/cluster.ts';
import type { CycleInput } from '../../domain/ha-cycle.ts';
import { requestApi } from '../../net/api-client.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import { timingOf, type DynamicConfig } from '../../domain/dynamic-config.ts';
import type { PgStatus } from '../../domain/pg-status.ts';
import type { DatabaseView, Notice } from '../node-core.ts';
import type { Fencing } from './fencing.ts';
import type { LeaderDeadline } from './leader-deadline.ts';
import type { LeaderLock } from './leader-lock.ts';

/** POSTs a JSON body to a member; the HTTP status, or undefined when it did not answer. */
export type FailsafePost = (url: string, body: unknown, timeoutMs: number) => Promise<number | undefined>;

/** Plain HTTP(S) POST without TLS material or credentials (the agent passes one with its member client settings). */
export const defaultFailsafePost: FailsafePost = async (url, body, timeoutMs) => {
  const r = await requestApi(url, { method: 'POST', body, timeoutMs });
  return r.reachable ? r.status : undefined;
};

/** Per-request timeout of a failsafe POST, ms (patroni.md §3.1: 2 s and one retry). */
export const FAILSAFE_POST_TIMEOUT_MS = 2000;

/** What Failsafe.facts adds to the cycle's input (the CycleInput fields of src/domain/ha-cycle.ts). */
export type FailsafeFacts = Pick<CycleInput, 'failsafeAccepted' | 'failsafeLeader' | 'failsafeRestartGraceMs' | 'failsafeBoundUntilMs'>;

/** What failsafe mode reads and calls (HaNode wires it). */
export interface FailsafeDeps {
  /** This member's name and addresses (the body of its POST /failsafe). */
  name: string;
  apiUrl: string;
  connUrl: string;
  dcs: Pick<Dcs, 'setFailsafe' | 'refresh'>;
  /** The effective dynamic configuration (NodeState). */
  state: Readonly<{ config: DynamicConfig }>;
  lock: Pick<LeaderLock, 'held'>;
  /** The fence, fed by an accepted round as by a renewal (fencing.ts). */
  fencing?: Pick<Fencing, 'stamp' | 'renewed'>;
  deadline: Pick<LeaderDeadline, 'leadingPrimary' | 'deadlineMs' | 'failsafeConfirmed'>;
  /** The database machine actor (throws before the node started). */
  db(): DatabaseView;
  /** The latest probe while the database runs. */
  probe(): PgStatus | undefined;
  /** Epoch ms. */
  now(): number;
  notice: Notice;
  /** POSTs to a member (default: plain HTTP(S), defaultFailsafePost). */
  post?: FailsafePost;
}

/** Failsafe mode on both sides: the leader's rounds of POST /failsafe and a replica's acceptances. */
export class Failsafe {
  /** Replica side: the last accepted POST /failsafe and when (node clock). */
  private accepted: { req: FailsafeRequest; atMs: number } | undefined;
  /** Leader side: since when this primary runs on failsafe (a round all members accepted). */
  private activeSinceMs: number | undefined;
  /** Leader side: when the last accepted round was sent (its acceptances hold for ttl from then). */
  private lastRoundSentMs = 0;
  /** Changes whenever what the snapshot shows changes (memo input of the snapshot). */
  version = 0;
  /** When this agent started (node clock): acceptances given before are not remembered. */
  private readonly startedMs: number;

  private readonly post: FailsafePost;

  constructor(private readonly d: FailsafeDeps) {
    this.startedMs = d.now();
    this.post = d.post ?? defaultFailsafePost;
  }

  // ---- replica side ----------------------------------------------------------------------------

  /** Answers a POST /failsafe (the API's command). `lsn`: this member's last known WAL position. */
  accept(body: Record<string, unknown>): FailsafeAnswer & { lsn?: string } {
    const core = this.d;
    let role = '';
    let state = '';
    let promoting = false;
    try {
      const s = core.db().getSnapshot();
      role = s.context.role;
      state = String(s.value);
      promoting = s.context.promoting;
    } catch {
      // not started yet
    }
    const { answer, request } = answerFailsafe(
      core.state.config,
      { name: core.name, runningPrimary: role === 'primary' && state === 'running', holdsLock: core.lock.held, promoting },
      body,
    );
    if (!request) return answer;
    const fresh = this.accepted === undefined || this.accepted.req.name !== request.name;
    this.accepted = { req: request, atMs: core.now() };
    this.version++;
    if (fresh)
      core.notice(
        'failsafe.accepted',
        `accepted POST /failsafe from ${request.name}: it stays the leader without the DCS; not racing for ttl`,
      );
    const p = core.probe();
    const lsn = p
      ? p.inRecovery
        ? [p.receiveLsn, p.replayLsn].reduce<bigint>((a, b) => (b !== undefined && b > a ? b : a), 0n)
        : (p.flushLsn ?? 0n)
      : undefined;
    return lsn !== undefined && lsn > 0n ? { ...answer, lsn: String(lsn) } : answer;
  }

  /**
   * Until when (epoch ms, node clock) POST /failsafe calls bind this member, whatever their age:
   * the last call accepted from another member + ttl and, for a member not running as primary,
   * this agent's start + ttl (the calls of the restart grace, forgotten). Undefined with failsafe
   * mode off or neither known. decideCycle counts quorum votes only after it (finding 20).
   */
  private boundUntilMs(role: string): number | undefined {
    const { config } = this.d.state;
    if (config.failsafe_mode !== true) return undefined;
    const { ttlMs } = timingOf(config);
    const a = this.accepted;
    const accepted = a && a.req.name !== this.d.name ? a.atMs + ttlMs : undefined;
    const grace = role !== 'primary' ? this.startedMs + ttlMs : undefined;
    if (accepted === undefined) return grace;
    return grace === undefined ? accepted : Math.max(accepted, grace);
  }

  /** The member that called POST /failsafe less than ttl ago, when failsafe mode is on. */
  acceptedLeader(): string | undefined {
    const a = this.accepted;
    const { state } = this.d;
    if (!a || state.config.failsafe_mode !== true) return undefined;
    return this.d.now() - a.atMs < timingOf(state.config).ttlMs ? a.req.name : undefined;
  }

  // ---- leader side -----------------------------------------------------------------------------

  /**
   * Facts for decideCycle. With the DCS unreachable, failsafe mode on, not paused, and this
   * database a running primary: one round of POST /failsafe; `failsafeAccepted` says whether
   * every listed member accepted in time. Also, for the race, the accepted leader (replica side)
   * and until when POST /failsafe calls bind this member (boundUntilMs).
   */
  async facts(i: { dcsOk: boolean; view: ClusterView; state: string; role: string }): Promise<FailsafeFacts> {
    const { config } = this.d.state;
    const out: FailsafeFacts = {};
    const leader = this.acceptedLeader();
    if (leader !== undefined) out.failsafeLeader = leader;
    // A POST /failsafe this member accepted before its agent restarted still binds it for ttl from
    // then (the sender may run as the leader on it): no race during the first ttl after the start.
    // Not for a primary (a running primary refuses POST /failsafe: it accepted none).
    const graceMs = this.startedMs + timingOf(config).ttlMs - this.d.now();
    if (config.failsafe_mode === true && graceMs > 0 && i.role !== 'primary') out.failsafeRestartGraceMs = graceMs;
    const boundUntilMs = this.boundUntilMs(i.role);
    if (boundUntilMs !== undefined) out.failsafeBoundUntilMs = boundUntilMs;
    if (i.dcsOk || config.failsafe_mode !== true || config.pause === true || i.role !== 'primary' || i.state !== 'running') {
      if (!i.dcsOk) this.stopActive('failsafe mode cannot keep this primary running');
      return out;
    }
    const ok = await this.round(i.view);
    out.failsafeAccepted = ok;
    if (!ok) this.stopActive('a member did not accept POST /failsafe in time: demoting');
    return out;
  }

  /**
   * After a cycle that reached the DCS: the leader (lock held, database a running primary) keeps
   * the `failsafe` key current, and failsafe is no longer active (patroni.md §3.2 step 15).
   * DCS failures reject.
   */
  async afterCycle(view: ClusterView): Promise<void> {
    if (!this.d.deadline.leadingPrimary()) return;
    this.stopActive(undefined);
    const deps = this.d;
    const action = failsafeKeyAction(deps.state.config, view, { name: deps.name, apiUrl: deps.apiUrl });
    if (action.kind === 'write') await deps.dcs.setFailsafe(action.value);
    else if (action.kind === 'delete') await deps.dcs.setFailsafe(null);
  }

  /**
   * Right after the keepalive reached the DCS again while failsafe kept this primary running:
   * re-read the DCS so that the cycle decides on what the store holds now (the leader key may have
   * expired meanwhile; this member then takes it back through the race, which members that
   * accepted the failsafe calls stay out of).
   */
  async dcsBack(): Promise<void> {
    if (this.activeSinceMs === undefined) return;
    await this.d.dcs.refresh().catch(() => undefined);
  }

  /** True while failsafe keeps this primary running, or (replica) an accepted call is less than ttl old. */
  active(): boolean {
    return this.activeSinceMs !== undefined || this.acceptedLeader() !== undefined;
  }

  /** Until when this primary may count itself the leader on failsafe's account (epoch ms); 0 when not active. */
  leaderUntilMs(): number {
    return this.activeSinceMs !== undefined ? this.lastRoundSentMs + timingOf(this.d.state.config).ttlMs : 0;
  }

  /** One round: POST to every other member of the key, all in parallel; true when all accepted before the deadline. */
  private async round(view: ClusterView): Promise<boolean> {
    const core = this.d;
    const targets = failsafeTargets(view.failsafe, core.name);
    if (!targets) {
      core.notice('failsafe.unlisted', 'failsafe mode: the failsafe key does not list this member: cannot stay primary without the DCS');
      return false;
    }
    const sentMs = core.now();
    // The fence (src/node/lock/fencing.ts) is fed by an accepted round as by a renewal: same send-time rule.
    const stamp = core.fencing?.stamp();
    const deadlineMs = core.deadline.deadlineMs();
    if (sentMs >= deadlineMs) return false;
    const probe = core.probe();
    const slots: Record<string, number> = {};
    for (const [k, v] of Object.entries(probe?.slots ?? {})) slots[k] = Number(v);
    const body = { name: core.name, conn_url: core.connUrl, api_url: core.apiUrl, slots };
    const results = await Promise.all(
      targets.map(async (t) => {
        for (let attempt = 0; attempt < 2; attempt++) {
          const left = deadlineMs - core.now();
          if (left <= 0) return false;
          const status = await this.post(failsafeUrl(t.apiUrl), body, Math.min(FAILSAFE_POST_TIMEOUT_MS, left)).catch(() => undefined);
          if (status === 200) return true;
          if (status !== undefined) return false; // an answer other than Accepted is final
        }
        return false;
      }),
    );
    if (!results.every(Boolean) || !core.deadline.failsafeConfirmed(sentMs)) return false;
    this.lastRoundSentMs = sentMs;
    if (stamp !== undefined) core.fencing?.renewed(stamp);
    if (this.activeSinceMs === undefined) {
      this.activeSinceMs = sentMs;
      core.notice(
        'failsafe.active',
        `DCS not accessible: continue to run as a leader because failsafe mode is enabled and all ${targets.length} other members accepted`,
      );
    }
    this.version++;
    return true;
  }

  private stopActive(why: string | undefined): void {
    if (this.activeSinceMs === undefined) return;
    this.activeSinceMs = undefined;
    this.lastRoundSentMs = 0;
    this.version++;
    this.d.notice('failsafe.inactive', why ?? 'DCS accessible again: failsafe no longer active');
  }
}
