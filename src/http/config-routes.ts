/**
 * GET/PATCH/PUT /config (seed 000 "Configuration"; patroni.md §1.7).
 *
 * - GET: the `config` document as stored in the DCS (cached view, defaults not filled) → 200;
 *   503 `config is not available in the DCS` when the key is missing (reference: 502).
 * - PATCH: non-empty JSON object → fresh `readCluster()` → recursive merge (`null` deletes a key,
 *   objects merge, anything else replaces) → validateDynamicConfig (types and
 *   `loop_wait + 2*retry_timeout <= ttl`, 400 naming the numbers) → `database.parameters` of the
 *   merged document checked against the PostgreSQL settings catalogue (below) → compare-and-set
 *   on the key's revision (409 `config modified concurrently`) → wake() → 200 with the merged
 *   document. An unchanged document is answered 200 without a write (as the reference).
 * - PUT: non-empty JSON object → validated, parameters checked → unconditional write → wake() →
 *   200 with the stored document.
 * Parameters (when `deps.settingsCatalogue()` gives a catalogue; no I/O here): unknown names and
 * values PostgreSQL would refuse at its next start → 400 `invalid configuration:
 * database.parameters.<name>: <problem>; …` (src/domain/pg-parameters.ts checkParameters). On
 * PATCH the whole merged mapping is checked, so a bad value stored earlier must be fixed or
 * deleted (`null`) along with the change.
 * DCS unreachable → 503 with the reason.
 */
import type { Hono } from 'hono';
import { validateDynamicConfig } from '../config/dynamic-schema.ts';
import { checkParameters, type ParameterValue } from '../domain/pg-parameters.ts';
import type { ResolvedDeps } from './deps.ts';
import { errorText, orFail, refuse } from './api-error.ts';
import { readJsonObject } from './json-body.ts';
import { document } from './responses.ts';

/** Recursive merge of `patch` into `base` (new object; `null` deletes, objects merge, other values replace). */
export function mergeConfig(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete out[key];
    } else if (isPlainObject(value) && isPlainObject(out[key])) {
      out[key] = mergeConfig(out[key] as Record<string, unknown>, value);
    } else if (isPlainObject(value)) {
      out[key] = mergeConfig({}, value);
    } else {
      out[key] = value;
    }
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(problems: string[]): Response {
  return refuse('invalid_request', `invalid configuration: ${problems.join('; ')}`);
}

/**
 * Problems of the validated document's `database.parameters` against the settings catalogue
 * (`database.parameters.<name>: <problem>` lines); none when there is no catalogue.
 */
function parameterProblems(deps: ResolvedDeps, doc: Record<string, unknown>): string[] {
  const catalogue = deps.settingsCatalogue();
  if (!catalogue) return [];
  const database = doc['database'];
  const params = isPlainObject(database) ? database['parameters'] : undefined;
  return isPlainObject(params) ? checkParameters(params as Record<string, ParameterValue>, catalogue) : [];
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
    const view = await orFail(() => deps.commands.readCluster(), 'dcs_unavailable', (e) => `DCS is not reachable: ${errorText(e)}`);
    const stored = view.config;
    if (!stored) return refuse('dcs_unavailable', 'config is not available in the DCS');
    const merged = mergeConfig(stored.value, body.value);
    const checked = validateDynamicConfig(merged);
    if (!checked.ok) return invalid(checked.problems);
    const next = checked.value as Record<string, unknown>;
    const paramProblems = parameterProblems(deps, next);
    if (paramProblems.length) return invalid(paramProblems);
    if (JSON.stringify(next) === JSON.stringify(stored.value)) return document(200, next);
    const written = await orFail(() => deps.commands.writeConfig(next, stored.revision), 'dcs_unavailable', (e) => `failed to write config into DCS: ${errorText(e)}`);
    if (!written) return refuse('conflict', 'config modified concurrently');
    deps.commands.wake();
    return document(200, next);
  });

  app.put('/config', async (c) => {
    const body = await readJsonObject(c, true);
    if (!body.ok) return body.response;
    const checked = validateDynamicConfig(body.value);
    if (!checked.ok) return invalid(checked.problems);
    const next = checked.value as Record<string, unknown>;
    const paramProblems = parameterProblems(deps, next);
    if (paramProblems.length) return invalid(paramProblems);
    const written = await orFail(() => deps.commands.writeConfig(next), 'dcs_unavailable', (e) => `failed to write config into DCS: ${errorText(e)}`);
    if (!written) return refuse('dcs_unavailable', 'failed to write config into DCS');
    deps.commands.wake();
    return document(200, next);
  });
}
