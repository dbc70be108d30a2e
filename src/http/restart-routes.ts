/**
 * POST /restart, DELETE /restart, POST /reload, POST /reinitialize (seed 000 "Restart, reload,
 * reinitialize"; patroni.md §1.9), and POST /backup (ours, docs/backups.md "Backups"). Body parsing and the restart conditions come from
 * src/domain/restart-conditions.ts; the timestamp from src/domain/schedule.ts.
 *
 * Our decisions (docs/api.md):
 * - `schedule` while paused → 409 `Can't schedule restart in the paused state` (reference: 500);
 * - a restart that throws → 503 `restart failed` (reference: 400);
 * - POST /reload waits for the node to re-read its file: 200 `reloaded`; a file that cannot be
 *   read or is invalid → 500 `reload failed: <reason>` (reference: always 202 `reload scheduled`);
 * - POST /reinitialize rejects unknown keys and non-boolean values with 400;
 * - POST /backup (body `{"create": bool}`, optional) runs the member's backup commands and answers
 *   when they end: 200 `backup done in N s`; 404 without a `backup` section; 503 with the reason
 *   (one running, the command's exit status and output tail) when it fails; 400 for another key.
 */
import type { Hono } from 'hono';
import type { ScheduledRestartData } from '../domain/member.ts';
import { parseRestartRequest, restartConditionsData, restartConditionsHold, restartTimeoutMs } from '../domain/restart-conditions.ts';
import { formatScheduledAt } from '../domain/schedule.ts';
import type { ResolvedDeps } from './deps.ts';
import { errorText, orFail, parseFailure, refuse } from './api-error.ts';
import { readJsonObject } from './json-body.ts';
import { message } from './responses.ts';

/** Registers the restart, reload and reinitialize routes on `app`. */
export function registerRestartRoutes(app: Hono, deps: ResolvedDeps): void {
  app.post('/restart', async (c) => {
    const body = await readJsonObject(c, false);
    if (!body.ok) return body.response;
    const s = deps.snapshot();
    if (Object.hasOwn(body.value, 'schedule') && s.config.pause === true) {
      return refuse('conflict', "Can't schedule restart in the paused state");
    }
    const parsed = parseRestartRequest(body.value, deps.now());
    if (!parsed.ok) return refuse(parseFailure(parsed.status), parsed.message);
    const req = parsed.value;

    if (req.atMs !== undefined) {
      if (s.scheduledRestart) return refuse('conflict', 'Another restart is already scheduled');
      const plan: ScheduledRestartData = { schedule: formatScheduledAt(req.atMs), ...restartConditionsData(req) };
      if (s.pg) plan.postmaster_start_time = s.pg.postmasterStartTime;
      const scheduled = await orFail(
        () => deps.commands.scheduleRestart(plan),
        'dcs_unavailable',
        (e) => `failed to schedule restart: ${errorText(e)}`,
      );
      return scheduled ? message(202, 'Restart scheduled') : refuse('conflict', 'Another restart is already scheduled');
    }

    const held = restartConditionsHold(req, {
      role: s.role,
      serverVersion: s.pg?.serverVersion ?? 0,
      pendingRestart: s.pg !== undefined && Object.keys(s.pg.pendingRestart).length > 0,
    });
    if (!held.ok) return refuse('refused', held.reason);
    const ms = restartTimeoutMs(req);
    const timeoutMs = ms !== undefined ? Math.round(ms) : undefined;
    const outcome = await orFail(
      () => deps.commands.restart(timeoutMs),
      'command_failed',
      () => 'restart failed',
    );
    return outcome.ok ? message(200, 'restarted successfully') : refuse('command_failed', outcome.reason);
  });

  app.delete('/restart', async () => {
    const cancelled = await orFail(
      () => deps.commands.cancelRestart(),
      'dcs_unavailable',
      (e) => `failed to cancel the scheduled restart: ${errorText(e)}`,
    );
    return cancelled ? message(200, 'scheduled restart deleted') : refuse('not_found', 'no restarts are scheduled');
  });

  app.post('/reload', async () => {
    await orFail(
      () => deps.commands.reload(),
      'reload_failed',
      (e) => `reload failed: ${errorText(e)}`,
    );
    return message(200, 'reloaded');
  });

  app.post('/reinitialize', async (c) => {
    const body = await readJsonObject(c, false);
    if (!body.ok) return body.response;
    let force = false;
    let fromLeader = false;
    for (const [key, value] of Object.entries(body.value)) {
      if (key !== 'force' && key !== 'from-leader' && key !== 'from_leader') {
        return refuse('invalid_request', `Unknown option for reinitialize: ${key}`);
      }
      if (typeof value !== 'boolean') return refuse('invalid_request', `${key} must be true or false`);
      if (key === 'force') force = value;
      else fromLeader = fromLeader || value;
    }
    const s = deps.snapshot();
    const lockHolder = s.cluster.leader?.name;
    if (lockHolder === undefined) return refuse('refused', 'Cluster has no leader, can not reinitialize');
    if (lockHolder === s.name || s.leaderUntilMs > deps.now()) return refuse('refused', 'I am the leader, can not reinitialize');
    const outcome = await orFail(
      () => deps.commands.reinitialize({ force, fromLeader }),
      'command_failed',
      (e) => `reinitialize failed: ${errorText(e)}`,
    );
    return outcome.ok ? message(200, 'reinitialize started') : refuse('refused', outcome.reason);
  });

  app.post('/backup', async (c) => {
    const body = await readJsonObject(c, false);
    if (!body.ok) return body.response;
    let create = false;
    for (const [key, value] of Object.entries(body.value)) {
      if (key !== 'create') return refuse('invalid_request', `Unknown option for backup: ${key}`);
      if (typeof value !== 'boolean') return refuse('invalid_request', `${key} must be true or false`);
      create = value;
    }
    const run = deps.commands.backup;
    if (!run) return refuse('not_found', 'this agent runs no backups');
    const outcome = await orFail(
      () => run.call(deps.commands, { create }),
      'command_failed',
      (e) => `backup failed: ${errorText(e)}`,
    );
    if (outcome.ok) return message(200, `backup done in ${(outcome.ms / 1000).toFixed(1)} s`);
    if (outcome.reason.startsWith('no backup section')) return refuse('not_found', outcome.reason);
    return refuse('command_failed', outcome.reason);
  });
}
