/**
 * Planning: which collectors a server gets (pg_exporter.md §1.5). Pure function of the loaded
 * collectors, the server's facts and the exporter's options.
 */
import type { CollectorDef, ServerFacts } from './types.ts';

/** Where the collectors will run. */
export interface PlanContext {
  facts: ServerFacts;
  /** Tags given with `--tag`. */
  cliTags: string[];
  /** Connected to pgbouncer's admin console. */
  pooler: boolean;
  /** An auto-discovered database (not the primary connection): `cluster` collectors are skipped. */
  forked: boolean;
}

/** Why a collector is not installed, or undefined when it is. Checks run in upstream's order. */
export function rejectReason(c: CollectorDef, ctx: PlanContext): string | undefined {
  if (c.skip) return 'skip';
  const hasPooler = c.tags.includes('pgbouncer');
  if (hasPooler !== ctx.pooler) return ctx.pooler ? 'not a pgbouncer collector' : 'pgbouncer collector';
  const v = ctx.facts.version;
  if (v !== 0) {
    if (c.minVersion !== 0 && v < c.minVersion) return `version ${v} < min_version ${c.minVersion}`;
    if (c.maxVersion !== 0 && v >= c.maxVersion) return `version ${v} >= max_version ${c.maxVersion}`;
  }
  for (const tag of c.tags) {
    const fail = tagFails(tag, ctx);
    if (fail) return fail;
  }
  return undefined;
}

function tagFails(tag: string, ctx: PlanContext): string | undefined {
  const f = ctx.facts;
  switch (tag) {
    case 'cluster':
      return ctx.forked ? 'cluster collector on a discovered database' : undefined;
    case 'primary':
    case 'master':
    case 'leader':
      return f.inRecovery ? 'primary only' : undefined;
    case 'standby':
    case 'replica':
    case 'slave':
      return f.inRecovery ? undefined : 'replica only';
    case 'pgbouncer':
      return undefined;
  }
  const colon = tag.indexOf(':');
  if (colon > 0) {
    const kind = tag.slice(0, colon);
    const arg = tag.slice(colon + 1);
    switch (kind) {
      case 'extension':
        return f.extensions.includes(arg) ? undefined : `extension ${arg} not installed`;
      case 'schema':
        return f.schemas.includes(arg) ? undefined : `schema ${arg} not found`;
      case 'dbname':
        return f.dbname === arg ? undefined : `dbname is not ${arg}`;
      case 'username':
        return f.username === arg ? undefined : `username is not ${arg}`;
      case 'not':
        return ctx.cliTags.includes(arg) ? `exporter tagged ${arg}` : undefined;
    }
  }
  return ctx.cliTags.includes(tag) ? undefined : `exporter not tagged ${tag}`;
}

/** Collectors to install, in the given (priority) order. */
export function planCollectors(collectors: CollectorDef[], ctx: PlanContext): CollectorDef[] {
  return collectors.filter((c) => rejectReason(c, ctx) === undefined);
}
