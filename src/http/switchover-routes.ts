/**
 * POST /switchover, POST /failover, DELETE /switchover (seed 000 "Switchover and failover";
 * patroni.md §1.8, §3.5). Checks run in the reference's order; the first failure wins and nothing
 * is written. Messages are the reference's, word for word.
 *
 * Our decisions (docs/api.md):
 * - unknown body keys → 400 `Unknown field for the <action>: <key>` (a typo must not turn a
 *   targeted switchover into "any member"); non-string values → 400 `<key> must be a string`;
 *   `candidate` and `member` (alias) both given and different → 400;
 * - a scheduled request first reads the DCS: another scheduled switchover → 409
 *   `Another switchover is already scheduled`; the write is a compare-and-set on the key's
 *   revision (lost → 409 `failover key modified concurrently`); `scheduled_at` is stored
 *   normalized to UTC (`…+00:00`);
 * - an immediate request polls snapshot().cluster (the node's cache, not the DCS) every
 *   `intervalMs` (25 ms) for `timeoutMs` (2 × max(10, loop_wait) s).
 */
import type { Hono } from 'hono';
import type { ClusterView, FailoverRequest } from '../domain/cluster.ts';
import { timingOf } from '../domain/dynamic-config.ts';
import { mayPromote, type Tags } from '../domain/member.ts';
import { formatScheduledAt, parseScheduledAt } from '../domain/schedule.ts';
import type { ResolvedDeps } from './deps.ts';
import { errorText, orFail, parseFailure, refuse, type ApiErrorCode } from './api-error.ts';
import { readJsonObject } from './json-body.ts';
import { admitHandover } from '../domain/switchover-admission.ts';
import { message } from './responses.ts';

type Action = 'switchover' | 'failover';

const BODY_KEYS: ReadonlySet<string> = new Set(['leader', 'candidate', 'member', 'scheduled_at']);

const capitalized = (a: Action) => (a === 'switchover' ? 'Switchover' : 'Failover');

/** A validated request: names are non-empty strings or undefined. */
interface SwitchoverRequest {
  action: Action;
  leader: string | undefined;
  candidate: string | undefined;
  scheduledAtMs: number | undefined;
}

/** Registers POST /switchover, POST /failover and DELETE /switchover on `app`. */
export function registerSwitchoverRoutes(app: Hono, deps: ResolvedDeps): void {
  for (const action of ['switchover', 'failover'] as const) {
    app.post(`/${action}`, async (c) => {
      const body = await readJsonObject(c, true);
      if (!body.ok) return body.response;
      const parsed = validateRequest(action, body.value, deps);
      if ('response' in parsed) return parsed.response;
      return parsed.scheduledAtMs !== undefined ? schedule(parsed, parsed.scheduledAtMs, deps) : runNow(parsed, deps);
    });
  }

  app.delete('/switchover', async () => {
    const view = await readCluster(deps);
    const failover = view.failover;
    if (failover?.value.scheduled_at === undefined) return refuse('not_found', 'no switchover is scheduled');
    const cleared = await orFail(
      () => deps.commands.writeFailover({}, failover.revision),
      'dcs_unavailable',
      (e) => `failed to write failover key into DCS: ${errorText(e)}`,
    );
    if (!cleared) return refuse('conflict', 'scheduled switchover modified concurrently');
    deps.commands.wake();
    return message(200, 'scheduled switchover deleted');
  });
}

/** A fresh read of the DCS; unreachable → ApiError 'dcs_unavailable' `DCS is not reachable: …`. */
function readCluster(deps: ResolvedDeps): Promise<ClusterView> {
  return orFail(
    () => deps.commands.readCluster(),
    'dcs_unavailable',
    (e) => `DCS is not reachable: ${errorText(e)}`,
  );
}

/** The failover key's write; unreachable → ApiError 'dcs_unavailable' `failed to write failover key into DCS`. */
function writeFailover(deps: ResolvedDeps, value: FailoverRequest, expected: string): Promise<boolean> {
  return orFail(
    () => deps.commands.writeFailover(value, expected),
    'dcs_unavailable',
    () => 'failed to write failover key into DCS',
  );
}

/** Body checks, rows 0–4 of patroni.md §1.8. */
function validateRequest(requested: Action, body: Record<string, unknown>, deps: ResolvedDeps): SwitchoverRequest | { response: Response } {
  const bad = (code: ApiErrorCode, text: string) => ({ response: refuse(code, text) });
  for (const [key, value] of Object.entries(body)) {
    if (!BODY_KEYS.has(key)) return bad('invalid_request', `Unknown field for the ${requested}: ${key}`);
    if (value !== null && typeof value !== 'string') return bad('invalid_request', `${key} must be a string`);
  }
  const name = (key: string) => {
    const v = body[key];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const leader = name('leader');
  const candidateField = name('candidate');
  const memberField = name('member');
  if (candidateField !== undefined && memberField !== undefined && candidateField !== memberField) {
    return bad('invalid_request', 'candidate and member (its alias) name different members');
  }
  const candidate = candidateField ?? memberField;
  if (requested === 'failover' && candidate === undefined) {
    return bad('invalid_request', 'Failover could be performed only to a specific candidate');
  }
  if (requested === 'switchover' && leader === undefined) {
    return bad('invalid_request', 'Switchover could be performed only from a specific leader');
  }
  const paused = deps.snapshot().config.pause === true;
  let scheduledAtMs: number | undefined;
  if (body['scheduled_at'] !== undefined && body['scheduled_at'] !== null) {
    if (requested === 'failover') return bad('invalid_request', "Failover can't be scheduled");
    if (paused) return bad('invalid_request', "Can't schedule switchover in the paused state");
    const at = parseScheduledAt(body['scheduled_at'], deps.now(), 'switchover');
    if (!at.ok) return bad(parseFailure(at.status), at.message);
    scheduledAtMs = at.atMs;
  }
  if (paused && candidate === undefined) {
    return bad('invalid_request', 'Switchover is possible only to a specific candidate in a paused state');
  }
  // A failover naming the leader is a switchover from here on (patroni.md §1.8).
  const action: Action = requested === 'failover' && leader !== undefined ? 'switchover' : requested;
  if (leader !== undefined && leader === candidate) return bad('invalid_request', 'Switchover target and source are the same');
  return { action, leader, candidate, scheduledAtMs };
}

/** Scheduled switchover: no member checks (patroni.md §1.8 rows 5 are skipped), CAS write, 202. */
async function schedule(req: SwitchoverRequest, atMs: number, deps: ResolvedDeps): Promise<Response> {
  const view = await readCluster(deps);
  if (view.failover?.value.scheduled_at !== undefined) return refuse('conflict', 'Another switchover is already scheduled');
  const value: FailoverRequest = {};
  if (req.leader !== undefined) value.leader = req.leader;
  if (req.candidate !== undefined) value.member = req.candidate;
  value.scheduled_at = formatScheduledAt(atMs);
  const written = await writeFailover(deps, value, view.failover?.revision ?? '0');
  if (!written) return refuse('conflict', 'failover key modified concurrently');
  deps.commands.wake();
  return message(202, 'Switchover scheduled');
}

/** A request the leader has yet to act on (a `failover` key naming a leader or a candidate). */
function activeRequest(view: ClusterView): { value: FailoverRequest; revision: string } | undefined {
  const f = view.failover;
  return f && (f.value.leader !== undefined || f.value.member !== undefined) ? f : undefined;
}

/**
 * Immediate switchover/failover: rows 5–6 of patroni.md §1.8, then polling (row 8).
 *
 * One switchover in flight (docs/api.md): the `failover` key is written with a compare-and-set
 * on the revision this request read, so concurrent requests cannot start a second switchover
 * after the first; a request that finds one pending (or loses the compare-and-set to one)
 * joins it and answers with its outcome.
 */
async function runNow(req: SwitchoverRequest, deps: ResolvedDeps): Promise<Response> {
  const { action, leader, candidate } = req;
  const view = await readCluster(deps);
  const refused = await memberChecks(req, view, deps);
  if (refused) return refuse('precondition_failed', refused);

  // The revision the node's cache shows before anything is written: the poll's evidence of change.
  const before = deps.snapshot().cluster.failover?.revision;
  const pending = activeRequest(view);
  if (pending && pending.value.scheduled_at === undefined) {
    return poll(action, view.leader?.name, candidate, pending.value, before, deps);
  }
  const value: FailoverRequest = {};
  if (leader !== undefined) value.leader = leader;
  if (candidate !== undefined) value.member = candidate;
  const expected = view.failover?.revision ?? view.failoverInvalid?.revision ?? '0';
  const written = await writeFailover(deps, value, expected);
  if (!written) {
    // Another request (or the leader clearing the key) got there first: join what is pending,
    // or report the change of leader it already made; never write a second request over it.
    const now = await readCluster(deps);
    const joined = activeRequest(now);
    if (joined && joined.value.scheduled_at === undefined) return poll(action, view.leader?.name, candidate, joined.value, before, deps);
    if (now.leader?.name !== undefined && now.leader.name !== view.leader?.name)
      return poll(action, view.leader?.name, candidate, value, before, deps);
    return refuse('conflict', 'failover key modified concurrently');
  }
  deps.commands.wake();
  return poll(action, view.leader?.name, candidate, value, before, deps);
}

/** Rows 5 of patroni.md §1.8; returns the 412 message, or undefined when the request may proceed. */
async function memberChecks(req: SwitchoverRequest, view: ClusterView, deps: ResolvedDeps): Promise<string | undefined> {
  const { action } = req;
  const admission = admitHandover(view, deps.snapshot().config, {
    action,
    ...(req.leader !== undefined ? { leader: req.leader } : {}),
    ...(req.candidate !== undefined ? { candidate: req.candidate } : {}),
  });
  if (!admission.ok) return admission.refusal;
  const considered = admission.considered;
  const answers = await Promise.all(considered.map((m) => deps.commands.fetchMemberStatus(m.data.api_url)));
  const good = answers.some((doc) => doc !== undefined && mayPromote(tagsOf(doc)) && doc['watchdog_failed'] !== true);
  return good ? undefined : `${action} is not possible: no good candidates have been found`;
}

function tagsOf(doc: Record<string, unknown>): Tags | undefined {
  const t = doc['tags'];
  return typeof t === 'object' && t !== null && !Array.isArray(t) ? (t as Tags) : undefined;
}

/**
 * 503 `<Action> failed`, with the reason the leader published in its member key
 * (`switchover_refused`, at or after the request: issue 30, item 5) when it arrives within
 * REFUSAL_WAIT_MS (the leader publishes its key at the end of the cycle that cleared the
 * failover key); without it, the bare answer.
 */
async function failed(action: Action, leader: string | undefined, startedMs: number, deps: ResolvedDeps): Promise<Response> {
  const reasonNow = (): string | undefined => {
    const m = deps.snapshot().cluster.members.find((x) => x.name === leader);
    const r = m?.data.switchover_refused;
    return r && Date.parse(r.at) >= startedMs - CLOCK_SKEW_MS ? r.reason : undefined;
  };
  let reason = reasonNow();
  for (let waited = 0; reason === undefined && waited < REFUSAL_WAIT_MS; waited += 50) {
    await sleep(50);
    reason = reasonNow();
  }
  return refuse('command_failed', reason === undefined ? `${capitalized(action)} failed` : `${capitalized(action)} failed: ${reason}`);
}

/** How long a failed request's answer waits for the leader's reason (ms). */
const REFUSAL_WAIT_MS = 2000;
/** Allowed difference between the leader's clock and this member's (ms). */
const CLOCK_SKEW_MS = 1000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Watches snapshot().cluster until a leader other than `oldLeader` holds the lock (200), the
 * failover key is cleared while the old leader still holds it (503 `<Action> failed`), or the
 * time is up (503 `<Action> status unknown after N seconds; …`). "Cleared" needs evidence that
 * the cache saw our write first (our value, or a revision other than `revisionBefore`).
 */
async function poll(
  action: Action,
  oldLeader: string | undefined,
  candidate: string | undefined,
  written: FailoverRequest,
  revisionBefore: string | undefined,
  deps: ResolvedDeps,
): Promise<Response> {
  const { loopWaitMs } = timingOf(deps.snapshot().config);
  const timeoutMs = deps.switchoverPoll.timeoutMs ?? 2 * Math.max(10_000, loopWaitMs);
  const intervalMs = Math.max(1, deps.switchoverPoll.intervalMs ?? 25);
  const rounds = Math.max(1, Math.ceil(timeoutMs / intervalMs));
  let seen = false;
  const startedMs = deps.now();
  for (let i = 0; i < rounds; i++) {
    await sleep(intervalMs);
    const cluster = deps.snapshot().cluster;
    const holder = cluster.leader?.name;
    if (holder !== undefined && holder !== oldLeader) {
      if (candidate !== undefined && holder !== candidate) {
        const verb = action === 'switchover' ? 'Switched over' : 'Failed over';
        return message(200, `${verb} to "${holder}" instead of "${candidate}"`);
      }
      const verb = action === 'switchover' ? 'switched over' : 'failed over';
      return message(200, `Successfully ${verb} to "${holder}"`);
    }
    const current = cluster.failover;
    const pending = current !== undefined && (current.value.leader !== undefined || current.value.member !== undefined);
    if (pending && current.value.leader === written.leader && current.value.member === written.member) seen = true;
    const changed = seen || (current?.revision ?? undefined) !== revisionBefore;
    if (changed && !pending && holder === oldLeader) return failed(action, oldLeader, startedMs, deps);
  }
  const seconds = Math.round(timeoutMs / 1000);
  return refuse('command_failed', `${capitalized(action)} status unknown after ${seconds} seconds; operation may still be in progress`);
}
