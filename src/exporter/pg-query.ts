/**
 * Running one SQL text on a postgres.js pool with a client-side deadline that cancels the
 * statement (a PostgreSQL CancelRequest via postgres.js `.cancel()`), as pg_exporter does with a
 * context deadline (pg_exporter.md §1.8). Unprepared (`unsafe`); simple protocol for pgbouncer.
 */
import type { Sql } from 'postgres';
import type { ArrayResult, QueryResult } from './result-families.ts';

/** The deadline passed before or while the statement ran; the statement was cancelled. */
export class QueryTimeoutError extends Error {
  readonly code = 'ETIMEOUT';
}

/**
 * Runs `text` and resolves with rows and column metadata. `deadlineMs` is an absolute
 * `Date.now()` time (undefined = no limit). Throws QueryTimeoutError when the deadline passes
 * (the query is cancelled server-side), or the driver's error (PostgresError with `.code`, or a
 * connection error such as ECONNREFUSED).
 */
export function runQuery(sql: Sql, text: string, deadlineMs: number | undefined, simple: boolean, what?: string): Promise<QueryResult>;
/** With `arrays`, rows come as arrays in column order (postgres.js `.values()`): no object per row. */
export function runQuery(
  sql: Sql,
  text: string,
  deadlineMs: number | undefined,
  simple: boolean,
  what: string,
  arrays: true,
): Promise<ArrayResult>;
export async function runQuery(
  sql: Sql,
  text: string,
  deadlineMs: number | undefined,
  simple: boolean,
  what = 'query',
  arrays = false,
): Promise<QueryResult | ArrayResult> {
  const started = Date.now();
  if (deadlineMs !== undefined && deadlineMs - started <= 0) throw new QueryTimeoutError(`${what} timeout: no time left`);
  const base = simple ? sql.unsafe(text).simple() : sql.unsafe(text);
  const q = arrays ? base.values() : base;
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const exec = (async () => {
    const res = await q;
    return res;
  })();
  try {
    const res =
      deadlineMs === undefined
        ? await exec
        : await Promise.race([
            exec,
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => {
                timedOut = true;
                try {
                  q.cancel();
                } catch {
                  /* not started yet */
                }
                reject(
                  new QueryTimeoutError(
                    `${what} timeout because duration ${Date.now() - started}ms exceed limit ${deadlineMs - started}ms`,
                  ),
                );
              }, deadlineMs - started);
            }),
          ]);
    // With the simple protocol several statements give several results: use the last one.
    const last =
      Array.isArray(res) && res.length > 0 && Array.isArray(res[res.length - 1]) && 'columns' in (res[res.length - 1] as object)
        ? (res[res.length - 1] as typeof res)
        : res;
    const columns = ((last as unknown as { columns?: { name: string; type: number }[] }).columns ?? []).map((c) => ({
      name: c.name,
      type: c.type,
    }));
    if (arrays) return { values: last as unknown as unknown[][], columns };
    return { rows: [...(last as unknown as Record<string, unknown>[])], columns };
  } catch (e) {
    if (timedOut && !(e instanceof QueryTimeoutError)) throw new QueryTimeoutError(`${what} timeout: ${(e as Error).message}`);
    throw e;
  } finally {
    if (timer) clearTimeout(timer);
    exec.catch(() => undefined);
  }
}
