/**
 * POST /failsafe (patroni.md §1.9, §3.7): the leader, with the DCS unreachable and
 * `failsafe_mode: true`, asks every member to accept it as leader. The node decides
 * (src/domain/failsafe.ts, src/node/lock/failsafe.ts): 200 `Accepted` with header `lsn` (this member's
 * last known WAL position, when known); 500 `Running as a leader` when this member runs as
 * primary; 502 when failsafe mode is off (also when the node does not implement it); 400 for a
 * body that is not `{name, conn_url, api_url, slots?}`.
 */
import type { Hono } from 'hono';
import type { ResolvedDeps } from './deps.ts';
import { readJsonObject } from './json-body.ts';
import { refuse } from './api-error.ts';
import { message } from './responses.ts';

/** Registers POST /failsafe on `app`. */
export function registerFailsafeRoutes(app: Hono, deps: ResolvedDeps): void {
  app.post('/failsafe', async (c) => {
    const accept = deps.commands.acceptFailsafe;
    if (!accept || deps.snapshot().config.failsafe_mode !== true) return refuse('not_enabled', 'failsafe mode is not enabled');
    const body = await readJsonObject(c, true);
    if (!body.ok) return body.response;
    const answer = accept(body.value);
    return message(answer.status, answer.text, answer.lsn !== undefined ? { lsn: answer.lsn } : undefined);
  });
}
