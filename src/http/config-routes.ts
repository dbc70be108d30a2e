/**
 * GET/PATCH/PUT /config (seed 000 "Configuration"; patroni.md §1.7; the rules of a change:
 * src/config/dynamic-change.ts, issue 32).
 *
 * - GET: the `config` document as stored in the DCS (cached view, defaults not filled, in its
 *   dialect) → 200; 503 `config is not available in the DCS` when the key is missing
 *   (reference: 502).
 * - PATCH: non-empty JSON object → fresh `readCluster()` → `checkPatch`: a body mixing
 *   `database` and `postgresql` → 400; a key the agent does not read that the patch adds or
 *   changes → 400 naming each (`loop_wiat: unknown key; did you mean loop_wait?`, `max_timelines_history:
 *   not supported: …`); keys already stored are kept; a body in the other dialect is written in
 *   the stored document's; recursive merge (`null` deletes a key, objects merge, anything else
 *   replaces); types, maxima and `loop_wait + 2*retry_timeout <= ttl` (400 naming the numbers) →
 *   `database.parameters` of the merged document checked against the PostgreSQL settings
 *   catalogue (below) → compare-and-set on the key's revision (409 `config modified
 *   concurrently`) → wake() → 200 with the merged document. An unchanged document is answered
 *   200 without a write (as the reference).
 * - PUT: non-empty JSON object → fresh `readCluster()` → `checkReplacement`: the PATCH rules on
 *   keys (an unread key stored with the same value may stay), then 400 when the body holds no
 *   setting the agent reads, or leaves out a setting whose default is less safe than the stored
 *   value (`synchronous_mode`, `standby_cluster`, `pause`, … : DROP_GUARDS); parameters checked →
 *   compare-and-set on the revision read (409 `config modified concurrently`; create-only when the
 *   key is missing) → wake() → 200 with the stored document; the settings left out, which fall
 *   back to their defaults, are named in the header `X-Config-Defaulted` (`ttl: 40 -> 30; …`).
 * Parameters (when `deps.settingsCatalogue()` gives a catalogue; no I/O here): unknown names and
 * values PostgreSQL would refuse at its next start → 400 `invalid configuration:
 * database.parameters.<name>: <problem>; …` (src/domain/pg-parameters.ts checkParameters). On
 * PATCH the whole merged mapping is checked, so a bad value stored earlier must be fixed or
 * deleted (`null`) along with the change.
 * DCS unreachable → 503 with the reason.
 */
import type { Hono } from 'hono';
import {
  checkPatch,
  checkReplacement,
  formatDefaulted,
  mergeDocuments,
  parameterProblems,
  type ChangeResult,
} from '../config/dynamic-change.ts';
import type { ResolvedDeps } from './deps.ts';
import { errorText, orFail, refuse } from './api-error.ts';
import { readJsonObject } from './json-body.ts';
import { document } from './responses.ts';

/** Name of the header of a PUT's answer naming the settings that fell back to their defaults. */
export const DEFAULTED_HEADER = 'X-Config-Defaulted';

/** Recursive merge of `patch` into `base` (new object; `null` deletes, objects merge, other values replace). */
export function mergeConfig(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  return mergeDocuments(base, patch);
}

function invalid(problems: string[]): Response {
  return refuse('invalid_request', `invalid configuration: ${problems.join('; ')}`);
}

/** Problems of the validated document's parameters against the local server's settings catalogue (the check hactl shares). */
function catalogueProblems(deps: ResolvedDeps, checked: Extract<ChangeResult, { ok: true }>): string[] {
  return parameterProblems(checked, deps.settingsCatalogue());
}

/** GET /config: the stored document of the cached view, or 503 when the key is missing. */
export function getConfigHandler(deps: ResolvedDeps): () => Response {
  return () => {
    const stored = deps.snapshot().cluster.config;
    return stored ? document(200, stored.value) : refuse('dcs_unavailable', 'config is not available in the DCS');
  };
}

/** Registers PATCH and PUT /config on `app` (GET is registered by app.ts with getConfigHandler). */
export function registerConfigRoutes(app: Hono, deps: ResolvedDeps): void {
  app.patch('/config', async (c) => {
    const body = await readJsonObject(c, true);
    if (!body.ok) return body.response;
    const view = await orFail(
      () => deps.commands.readCluster(),
      'dcs_unavailable',
      (e) => `DCS is not reachable: ${errorText(e)}`,
    );
    const stored = view.config;
    if (!stored) return refuse('dcs_unavailable', 'config is not available in the DCS');
    const checked = checkPatch(stored.value, body.value);
    if (!checked.ok) return invalid(checked.problems);
    const next = checked.document;
    const paramProblems = catalogueProblems(deps, checked);
    if (paramProblems.length) return invalid(paramProblems);
    if (JSON.stringify(next) === JSON.stringify(stored.value)) return document(200, next);
    const written = await orFail(
      () => deps.commands.writeConfig(next, stored.revision),
      'dcs_unavailable',
      (e) => `failed to write config into DCS: ${errorText(e)}`,
    );
    if (!written) return refuse('conflict', 'config modified concurrently');
    deps.commands.wake();
    return document(200, next);
  });

  app.put('/config', async (c) => {
    const body = await readJsonObject(c, true);
    if (!body.ok) return body.response;
    const view = await orFail(
      () => deps.commands.readCluster(),
      'dcs_unavailable',
      (e) => `DCS is not reachable: ${errorText(e)}`,
    );
    const stored = view.config;
    const checked = checkReplacement(stored?.value, body.value);
    if (!checked.ok) return invalid(checked.problems);
    const next = checked.document;
    const paramProblems = catalogueProblems(deps, checked);
    if (paramProblems.length) return invalid(paramProblems);
    const written = await orFail(
      () => deps.commands.writeConfig(next, stored?.revision ?? '0'),
      'dcs_unavailable',
      (e) => `failed to write config into DCS: ${errorText(e)}`,
    );
    if (!written) return refuse('conflict', 'config modified concurrently');
    deps.commands.wake();
    const defaulted = checked.defaulted.map(formatDefaulted).join('; ');
    return document(200, next, defaulted ? { [DEFAULTED_HEADER]: defaulted } : undefined);
  });
}
