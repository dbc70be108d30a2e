/**
 * Value codecs for every key of the DCS layout (shared/docs/dcs-layout.md). Parsing happens here,
 * at the edge, with valibot: a stored value that does not parse yields `undefined` and is left out
 * of the view (no log, no throw), so one bad `members/x` cannot break the view of the cluster.
 * Encoding is compact JSON (JSON.stringify without spacing), except `leader` (plain text name)
 * and `initialize` (plain decimal text).
 */
import * as v from 'valibot';
import type { FailoverRequest, HistoryEntry, LeaderStatus, SyncState } from '../domain/cluster.ts';
import type { MemberData } from '../domain/member.ts';
import { parseScheduledAt } from '../domain/schedule.ts';
import { DATABASE_STATES } from '../domain/states.ts';
import { memberFromReference } from './reference-member.ts';

const int = () => v.pipe(v.number(), v.integer());

const TagsSchema = v.looseObject({
  nofailover: v.optional(v.boolean()),
  noloadbalance: v.optional(v.boolean()),
  clonefrom: v.optional(v.boolean()),
  nosync: v.optional(v.boolean()),
  failover_priority: v.optional(v.number()),
});

const ScheduledRestartSchema = v.looseObject({
  schedule: v.string(),
  restart_pending: v.optional(v.boolean()),
  role: v.optional(v.string()),
  database_version: v.optional(v.string()),
  timeout: v.optional(v.number()),
  postmaster_start_time: v.optional(v.string()),
});

/** Schema of `members/<name>` (dcs-layout.md "Member data"); unknown extra keys are kept. */
export const MemberDataSchema = v.looseObject({
  conn_url: v.string(),
  api_url: v.string(),
  state: v.picklist(DATABASE_STATES),
  role: v.picklist(['primary', 'replica', 'standby_leader', 'uninitialized']),
  version: v.string(),
  xlog_location: v.optional(int()),
  receive_lsn: v.optional(int()),
  replay_lsn: v.optional(int()),
  replication_state: v.optional(v.picklist(['streaming', 'in archive recovery'])),
  timeline: v.optional(int()),
  tags: v.optional(TagsSchema),
  pending_restart: v.optional(v.boolean()),
  pending_restart_reason: v.optional(v.record(v.string(), v.object({ old_value: v.string(), new_value: v.string() }))),
  scheduled_restart: v.optional(ScheduledRestartSchema),
  pause: v.optional(v.boolean()),
  not_streaming_since: v.optional(v.string()),
  diverged: v.optional(v.string()),
  failure: v.optional(v.string()),
  switchover_refused: v.optional(v.object({ at: v.string(), reason: v.string() })),
  progress: v.optional(v.string()),
});

/** Schema of `status`. */
export const LeaderStatusSchema = v.looseObject({
  optime: int(),
  slots: v.optional(v.record(v.string(), int())),
  retain_slots: v.optional(v.array(v.string())),
});

/** How a stored value is shown in a reason: JSON, cut to 80 characters. */
function shown(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** `scheduled_at` problem: undefined for ISO 8601 with an offset (in the past too: staleness is decided later). */
function scheduledAtProblem(text: string): string | undefined {
  const parsed = parseScheduledAt(text, Number.NEGATIVE_INFINITY);
  if (parsed.ok) return undefined;
  return parsed.status === 400 ? 'has no timezone offset' : 'is not an ISO 8601 date-time';
}

const failoverString = (field: string) => v.string((i) => `${field}: must be a string, got ${shown(i.input)}`);

/**
 * Schema of a `failover` value: a JSON object whose `leader` and `member`, when present, are
 * strings and whose `scheduled_at`, when present, is an ISO 8601 date-time with an offset
 * (domain/schedule.ts `parseScheduledAt`). Unknown keys are kept. `{}` is the valid "no request".
 * Messages name the field and the value (`scheduled_at: "tomorrow" is not an ISO 8601 date-time`).
 */
export const FailoverSchema = v.looseObject(
  {
    leader: v.optional(failoverString('leader')),
    member: v.optional(failoverString('member')),
    scheduled_at: v.optional(
      v.pipe(
        failoverString('scheduled_at'),
        v.check(
          (s) => scheduledAtProblem(s) === undefined,
          (i) => `scheduled_at: ${shown(i.input)} ${scheduledAtProblem(String(i.input)) ?? 'does not parse'}`,
        ),
      ),
    ),
  },
  (i) => `must be a JSON object, got ${shown(i.input)}`,
);

/** Schema of `sync`. */
export const SyncSchema = v.looseObject({
  leader: v.string(),
  sync_standby: v.nullable(v.string()),
  quorum: v.optional(int()),
});

const HistoryEntrySchema = v.tuple([int(), int(), v.string(), v.optional(v.nullable(v.string())), v.optional(v.nullable(v.string()))]);

/** Schema of `history`: a list of `[timeline, switch_lsn, reason, timestamp?, new_leader?]`. */
export const HistorySchema = v.array(HistoryEntrySchema);

/** Schema of `config`: any JSON object (defaults are filled elsewhere). */
export const ConfigSchema = v.record(v.string(), v.unknown());

/** Schema of `failsafe`: member name -> api_url. */
export const FailsafeSchema = v.record(v.string(), v.string());

function parseJson<S extends v.GenericSchema>(
  schema: S,
  raw: string,
  read: (d: unknown) => unknown = (d) => d,
): v.InferOutput<S> | undefined {
  let data: unknown;
  try {
    data = read(JSON.parse(raw));
  } catch {
    return undefined;
  }
  // valibot's record() also accepts lists; no value of the layout is a bare list except history.
  if (Array.isArray(data) && (schema as v.GenericSchema) !== HistorySchema) return undefined;
  const r = v.safeParse(schema, data);
  return r.success ? r.output : undefined;
}

/**
 * Parses `members/<name>`; undefined when it is not valid member data. A member key of the
 * reference is read in our words (reference-member.ts: `role: master` → `primary`, `creating
 * replica` → `creating_replica`, …).
 */
export function decodeMember(raw: string): MemberData | undefined {
  return parseJson(MemberDataSchema, raw, memberFromReference) as MemberData | undefined;
}

/** Parses `leader` (plain text member name); undefined when empty. */
export function decodeLeader(raw: string): string | undefined {
  return raw.length > 0 ? raw : undefined;
}

/** Parses `initialize`: a decimal system identifier, or '' while bootstrap runs; undefined otherwise. */
export function decodeInitialize(raw: string): string | undefined {
  return /^\d*$/.test(raw) ? raw : undefined;
}

/** Parses `status`. */
export function decodeStatus(raw: string): LeaderStatus | undefined {
  return parseJson(LeaderStatusSchema, raw);
}

/** Outcome of `parseFailover`: the request, or why the stored value is not one. */
export type ParsedFailover = { ok: true; value: FailoverRequest } | { ok: false; reason: string };

/**
 * Parses `failover`. `{}` and the empty string both mean "no request" and decode to `{}`
 * (kept in the view with its revision, so a compare-and-set can still address the key).
 * Anything else that is not a valid request (not JSON, not an object, `leader`/`member` not
 * strings, `scheduled_at` not an ISO 8601 date-time with an offset) gives a reason naming the
 * field and the value, e.g. `scheduled_at: "soon" is not an ISO 8601 date-time`. Never throws.
 */
export function parseFailover(raw: string): ParsedFailover {
  if (raw.trim() === '') return { ok: true, value: {} };
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return { ok: false, reason: `not JSON: ${shown(raw)}` };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { ok: false, reason: `must be a JSON object, got ${shown(data)}` };
  }
  const r = v.safeParse(FailoverSchema, data);
  if (r.success) return { ok: true, value: r.output };
  return { ok: false, reason: [...new Set(r.issues.map((i) => i.message))].join('; ') };
}

/** Parses `failover`; undefined when it is not a valid request (see `parseFailover` for why). */
export function decodeFailover(raw: string): FailoverRequest | undefined {
  const r = parseFailover(raw);
  return r.ok ? r.value : undefined;
}

/** True when a failover value carries no request (`{}`: neither leader, member nor scheduled_at). */
export function isEmptyFailover(f: FailoverRequest | undefined): boolean {
  return !f || (f.leader === undefined && f.member === undefined && f.scheduled_at === undefined);
}

/** Parses `sync`. */
export function decodeSync(raw: string): SyncState | undefined {
  return parseJson(SyncSchema, raw);
}

/** Parses `history`; trailing missing/null fields of an entry are dropped. */
export function decodeHistory(raw: string): HistoryEntry[] | undefined {
  const parsed = parseJson(HistorySchema, raw);
  if (!parsed) return undefined;
  return parsed.map(([tl, lsn, reason, ts, leader]) => {
    const entry: HistoryEntry = [tl, lsn, reason];
    if (ts != null || leader != null) entry.push(ts ?? '');
    if (leader != null) entry.push(leader);
    return entry;
  });
}

/** Parses `config` (any JSON object). */
export function decodeConfig(raw: string): Record<string, unknown> | undefined {
  return parseJson(ConfigSchema, raw);
}

/** Parses `failsafe`. */
export function decodeFailsafe(raw: string): Record<string, string> | undefined {
  return parseJson(FailsafeSchema, raw);
}

/** Compact JSON (no spaces), the encoding of every JSON key. */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value);
}

/** Member data as stored: compact JSON (undefined fields omitted). */
export function encodeMember(data: MemberData): string {
  return JSON.stringify(data);
}

/** `status` as stored: compact JSON with empty `slots` / `retain_slots` omitted (dcs-layout.md). */
export function encodeStatus(status: LeaderStatus): string {
  const out: LeaderStatus = { optime: status.optime };
  if (status.slots && Object.keys(status.slots).length > 0) out.slots = status.slots;
  if (status.retain_slots && status.retain_slots.length > 0) out.retain_slots = status.retain_slots;
  return JSON.stringify(out);
}
