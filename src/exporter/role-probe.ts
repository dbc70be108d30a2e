/**
 * Background role probe (pg_exporter.md §2.2): once at start and then every second, run
 * `SELECT pg_catalog.pg_is_in_recovery()` (pgbouncer: `SHOW VERSION;`) on a dedicated
 * one-connection pool within the connect timeout, and cache the role. HTTP handlers read the
 * cached value only; they never query.
 */
import postgres, { type Sql } from 'postgres';
import { runQuery } from './pg-query.ts';

/** Cached role state. `unknown` before the first probe; `starting` on SQLSTATE 57P03. */
export type Role = 'primary' | 'replica' | 'down' | 'starting' | 'unknown';

/** Maps a probe error to a role: 57P03 (cannot_connect_now) is `starting`, anything else `down`. */
export function roleFromError(e: unknown): Role {
  return (e as { code?: string } | null)?.code === '57P03' ? 'starting' : 'down';
}

/** A probe failure in one line: the SQLSTATE's message (`password authentication failed for user "x"`), or the connection error. */
export function probeErrorText(e: unknown): string {
  const err = e as { message?: unknown; code?: unknown } | null;
  const msg = typeof err?.message === 'string' && err.message !== '' ? err.message : String(e);
  return typeof err?.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code) ? `${msg} (SQLSTATE ${err.code})` : msg;
}

export interface RoleProbeOptions {
  url: string;
  pooler: boolean;
  connectTimeoutMs: number;
  intervalMs?: number;
  applicationName: string;
  onChange?: (role: Role, previous: Role) => void;
}

export class RoleProbe {
  role: Role = 'unknown';
  /** Why the last probe failed (the server's or the connection's message), while it does; undefined after a success. */
  lastError: string | undefined;
  private readonly sql: Sql;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly opts: RoleProbeOptions) {
    this.sql = postgres(opts.url, {
      max: 1,
      prepare: false,
      fetch_types: false,
      connect_timeout: Math.max(opts.connectTimeoutMs, 100) / 1000,
      connection: opts.pooler ? {} : { application_name: opts.applicationName },
      onnotice: () => undefined,
    });
  }

  /** Sets the role (also used by scrapes, which overwrite it like upstream). */
  set(role: Role): void {
    const prev = this.role;
    this.role = role;
    if (prev !== role) this.opts.onChange?.(role, prev);
  }

  /** Runs one probe now; resolves with the new role. Never throws. */
  async probe(): Promise<Role> {
    if (this.running) return this.role;
    this.running = true;
    try {
      const deadline = Date.now() + this.opts.connectTimeoutMs;
      if (this.opts.pooler) {
        await runQuery(this.sql, 'SHOW VERSION;', deadline, true, 'probe');
        this.set('primary');
      } else {
        const res = await runQuery(this.sql, 'SELECT pg_catalog.pg_is_in_recovery() AS r', deadline, false, 'probe');
        this.set(res.rows[0]?.['r'] === true ? 'replica' : 'primary');
      }
      this.lastError = undefined;
    } catch (e) {
      this.lastError = probeErrorText(e);
      this.set(roleFromError(e));
    } finally {
      this.running = false;
    }
    return this.role;
  }

  /** Probes now and then every `intervalMs` (default 1000). */
  start(): void {
    if (this.timer) return;
    void this.probe();
    this.timer = setInterval(() => void this.probe(), this.opts.intervalMs ?? 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.sql.end({ timeout: 1 }).catch(() => undefined);
  }
}
