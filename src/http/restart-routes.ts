/**
 * POST /restart, DELETE /restart, POST /reload, POST /reinitialize (seed 000 "Restart, reload,
 * reinitialize"; patroni.md §1.9). Body parsing and the restart conditions come from
 * src/domain/restart-conditions.ts; the timestamp from src/domain/schedule.ts.
 *
 * Our decisions (docs/api.md):
 * - `schedule` while paused → 409 `Can't schedule restart in the paused state` (reference: 500);
 * - a restart that throws → 503 `restart failed` (reference: 400);
 * - POST /reload waits for the node to re-read its file: 200 `reloaded`; a file that cannot be
 *   read or is invalid → 500 `reload failed: <reason>` (reference: always 202 `reload scheduled`);
 * - POST /reinitialize rejects unknown keys and non-boolean values with 400.
 */
import type { Hono } from 'hono';
import type { ScheduledRestartData } from '../domain/member.ts';
import { parseRestartRequest, restartConditionsData, restartConditionsHold } from '../domain/restart-conditions.ts';
import { formatScheduledAt } from '../domain/schedule.ts';
import type { ResolvedDeps } from './deps.ts';
import { errorText, readJsonObject } from './json-body.ts';
import { message } from './responses.ts';

/** Registers the restart, reload and reinitialize routes on `app`. */
export function registerRestartRoutes(app: Hono, deps: ResolvedDeps): void {
  app.post('/restart', async (c) => {
    const body = await readJsonObject(c, false);
    if (!body.ok) return body.response;
    const s = deps.snapshot();
    if (Object.hasOwn(body.value, 'schedule') && s.config.pause === true) {
      return message(409, "Can't schedule restart in the paused state");
    }
    const parsed = parseRestartRequest(body.value, deps.now());
    if (!parsed.ok) return message(parsed.status, parsed.message);
    const req = parsed.value;

    if (req.atMs !== undefined) {
      if (s.scheduledRestart) return message(409, 'Another restart is already scheduled');
      const plan: ScheduledRestartData = { schedule: formatScheduledAt(req.atMs), ...restartConditionsData(req) };
      if (s.pg) plan.postmaster_start_time = s.pg.postmasterStartTime;
      let scheduled: boolean;
      try {
        scheduled = await deps.commands.scheduleRestart(plan);
      } catch (e) {
        return message(503, `failed to schedule restart: ${errorText(e)}`);
      }
      return scheduled ? message(202, 'Restart scheduled') : message(409, 'Another restart is already scheduled');
    }

    const held = restartConditionsHold(req, {
      role: s.role,
      serverVersion: s.pg?.serverVersion ?? 0,
      pendingRestart: s.pg !== undefined && Object.keys(s.pg.pendingRestart).length > 0,
    });
    if (!held.ok) return message(503, held.reason);
    try {
      const timeoutMs = req.timeoutSeconds !== undefined ? Math.round(req.timeoutSeconds * 1000) : undefined;
      const outcome = await deps.commands.restart(timeoutMs);
      return outcome.ok ? message(200, 'restarted successfully') : message(503, outcome.reason);
    } catch {
      return message(503, 'restart failed');
    }
  });

  app.delete('/restart', async () => {
    let cancelled: boolean;
    try {
      cancelled = await deps.commands.cancelRestart();
    } catch (e) {
      return message(503, `failed to cancel the scheduled restart: ${errorText(e)}`);
    }
    return cancelled ? message(200, 'scheduled restart deleted') : message(404, 'no restarts are scheduled');
  });

  app.post('/reload', async () => {
    try {
      await deps.commands.reload();
    } catch (e) {
      return message(500, `reload failed: ${errorText(e)}`);
    }
    return message(200, 'reloaded');
  });

  app.post('/reinitialize', async (c) => {
    const body = await readJsonObject(c, false);
    if (!body.ok) return body.response;
    let force = false;
    let fromLeader = false;
    for (const [key, value] of Object.entries(body.value)) {
      if (key !== 'force' && key !== 'from-leader' && key !== 'from_leader') {
        return message(400, `Unknown option for reinitialize: ${key}`);
      }
      if (typeof value !== 'boolean') return message(400, `${key} must be true or false`);
      if (key === 'force') force = value;
      else fromLeader = fromLeader || value;
    }
    const s = deps.snapshot();
    const lockHolder = s.cluster.leader?.name;
    if (lockHolder === undefined) return message(503, 'Cluster has no leader, can not reinitialize');
    if (lockHolder === s.name || s.leaderUntilMs > deps.now()) return message(503, 'I am the leader, can not reinitialize');
    let outcome;
    try {
      outcome = await deps.commands.reinitialize({ force, fromLeader });
    } catch (e) {
      return message(503, `reinitialize failed: ${errorText(e)}`);
    }
    return outcome.ok ? message(200, 'reinitialize started') : message(503, outcome.reason);
  });
}
