/**
 * DCS failsafe mode (patroni.md §3.7, §1.9; dcs-layout.md `failsafe`). Pure rules:
 * - the `failsafe` key the leader keeps while the DCS answers: `{name: api_url}` of every member,
 *   itself included;
 * - the body of POST /failsafe and the replica's answer to it;
 * - the leader race: a member that accepted a POST /failsafe within ttl does not race (the sender
 *   still leads), and a member not listed in a non-empty `failsafe` key never wins the race.
 */
import type { ClusterView } from './cluster.ts';
import type { DynamicConfig } from './dynamic-config.ts';

/** The `failsafe` key's value the leader should publish: every member's api_url, itself included. */
export function failsafeMembers(view: ClusterView, self: { name: string; apiUrl: string }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of view.members) if (m.data.api_url) out[m.name] = m.data.api_url;
  out[self.name] = self.apiUrl;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** True when two failsafe values list the same members with the same URLs. */
export function sameFailsafe(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  if (!a || !b) return a === b;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}

/**
 * What the leader does about the `failsafe` key this cycle (DCS reachable, lock held): write the
 * member list when failsafe mode is on and the key differs, delete a left-over key when it is off.
 */
export function failsafeKeyAction(
  config: Pick<DynamicConfig, 'failsafe_mode'>,
  view: ClusterView,
  self: { name: string; apiUrl: string },
): { kind: 'none' } | { kind: 'write'; value: Record<string, string> } | { kind: 'delete' } {
  if (config.failsafe_mode !== true) return view.failsafe !== undefined ? { kind: 'delete' } : { kind: 'none' };
  const value = failsafeMembers(view, self);
  return sameFailsafe(value, view.failsafe) ? { kind: 'none' } : { kind: 'write', value };
}

/** The body of POST /failsafe: the leader's name, conn_url, api_url and slot positions. */
export interface FailsafeRequest {
  name: string;
  conn_url: string;
  api_url: string;
  slots?: Record<string, number>;
}

/** Parses a POST /failsafe body; a string naming the problem when it is not one. */
export function parseFailsafeRequest(body: Record<string, unknown>): FailsafeRequest | string {
  for (const k of ['name', 'conn_url', 'api_url'] as const) {
    if (typeof body[k] !== 'string' || body[k] === '') return `${k} must be a non-empty string`;
  }
  const slots = body['slots'];
  if (slots !== undefined && slots !== null) {
    if (typeof slots !== 'object' || Array.isArray(slots)) return 'slots must be a mapping of slot name to LSN';
    for (const [k, v] of Object.entries(slots)) if (typeof v !== 'number' || !Number.isFinite(v)) return `slots.${k} must be a number`;
  }
  return {
    name: body['name'] as string,
    conn_url: body['conn_url'] as string,
    api_url: body['api_url'] as string,
    ...(slots && typeof slots === 'object' ? { slots: slots as Record<string, number> } : {}),
  };
}

/** What a member answers to POST /failsafe (patroni.md §1.9). */
export type FailsafeAnswer =
  | { status: 200; text: 'Accepted' }
  | { status: 500; text: 'Running as a leader' }
  | { status: 502; text: string }
  | { status: 400; text: string };

/**
 * The answer of a member to a POST /failsafe: 502 when failsafe mode is off; 400 for a bad body;
 * 500 `Running as a leader` when it runs as primary, holds the lock or is being promoted (it may
 * be the new leader: the sender must not go on); otherwise 200 `Accepted`.
 */
export function answerFailsafe(
  config: Pick<DynamicConfig, 'failsafe_mode'>,
  self: { name: string; runningPrimary: boolean; holdsLock: boolean; promoting: boolean },
  body: Record<string, unknown>,
): { answer: FailsafeAnswer; request?: FailsafeRequest } {
  if (config.failsafe_mode !== true) return { answer: { status: 502, text: 'failsafe mode is not enabled' } };
  const req = parseFailsafeRequest(body);
  if (typeof req === 'string') return { answer: { status: 400, text: req } };
  if (req.name !== self.name && (self.runningPrimary || self.holdsLock || self.promoting)) {
    return { answer: { status: 500, text: 'Running as a leader' } };
  }
  return { answer: { status: 200, text: 'Accepted' }, request: req };
}

/**
 * Why this member must not take part in the leader race in failsafe mode, or undefined:
 * - it accepted a POST /failsafe from another member less than ttl ago (`acceptedLeader`): that
 *   member still runs as the leader without the DCS;
 * - its agent started less than ttl ago while the `failsafe` key lists members (`restartGraceMs`,
 *   ms left): an acceptance given before the restart is forgotten, yet the member that sent it may
 *   still run as the leader on it (finding 10b, docs/simulation.md);
 * - the `failsafe` key is not empty and does not list it (patroni.md §3.3).
 */
export function failsafeRaceVeto(i: {
  name: string;
  config: Pick<DynamicConfig, 'failsafe_mode'>;
  view: ClusterView;
  acceptedLeader?: string;
  restartGraceMs?: number;
}): string | undefined {
  if (i.config.failsafe_mode !== true) return undefined;
  if (i.acceptedLeader !== undefined && i.acceptedLeader !== i.name) {
    return `${i.acceptedLeader} runs as the leader in failsafe mode (it called POST /failsafe less than ttl ago)`;
  }
  if (i.restartGraceMs !== undefined && i.restartGraceMs > 0 && Object.keys(i.view.failsafe ?? {}).length > 0) {
    return `this agent started less than ttl ago and may have accepted POST /failsafe before: not racing for ${i.restartGraceMs} ms`;
  }
  if (!failsafeListed(i.config, i.view, i.name)) return 'I am not listed in the failsafe key';
  return undefined;
}

/**
 * True when `name` may win a leader race as far as the `failsafe` key goes: failsafe mode off, the
 * key empty or absent, or the key lists it (the rule failsafeRaceVeto applies to the racer).
 */
export function failsafeListed(config: Pick<DynamicConfig, 'failsafe_mode'>, view: ClusterView, name: string): boolean {
  const listed = view.failsafe;
  return config.failsafe_mode !== true || !listed || Object.keys(listed).length === 0 || Object.hasOwn(listed, name);
}

/** The members a failsafe round calls: every entry of the key except the leader itself. Undefined when the key does not list the leader. */
export function failsafeTargets(
  failsafe: Record<string, string> | undefined,
  self: string,
): { name: string; apiUrl: string }[] | undefined {
  if (!failsafe || !Object.hasOwn(failsafe, self)) return undefined;
  return Object.entries(failsafe)
    .filter(([name]) => name !== self)
    .map(([name, apiUrl]) => ({ name, apiUrl }));
}

/** URL of POST /failsafe on the member whose api_url is `apiUrl` (`http://h:p/ha` → `http://h:p/failsafe`). */
export function failsafeUrl(apiUrl: string): string {
  return new URL('/failsafe', apiUrl).toString();
}
