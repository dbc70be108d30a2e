/**
 * `--web.config.file` in the Prometheus exporter-toolkit format: `tls_server_config`
 * (`cert_file`, `key_file`, relative paths resolved from the file's directory) and
 * `basic_auth_users` (user -> bcrypt hash). Basic auth applies to every route.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import bcrypt from 'bcryptjs';
import type { MiddlewareHandler } from 'hono';
import * as v from 'valibot';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './config-load.ts';

const WebConfigSchema = v.object({
  tls_server_config: v.optional(
    v.nullable(
      v.object({
        cert_file: v.pipe(v.string('tls_server_config.cert_file is required'), v.nonEmpty('tls_server_config.cert_file is empty')),
        key_file: v.pipe(v.string('tls_server_config.key_file is required'), v.nonEmpty('tls_server_config.key_file is empty')),
      }),
    ),
  ),
  basic_auth_users: v.optional(
    v.nullable(
      v.record(
        v.string(),
        v.pipe(v.string('password hashes must be strings'), v.regex(/^\$2[abxy]?\$\d\d\$/, 'password must be a bcrypt hash')),
      ),
    ),
  ),
});

/** A loaded web configuration: TLS material (PEM) and the user -> bcrypt hash map. */
export interface WebConfig {
  tls?: { cert: Buffer; key: Buffer };
  users: Record<string, string>;
}

/** Reads and validates a web config file. Throws ConfigError naming the file and the problem. */
export function loadWebConfig(path: string): WebConfig {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(`web config ${path}: ${(e as Error).message}`);
  }
  const r = v.safeParse(WebConfigSchema, data ?? {});
  if (!r.success)
    throw new ConfigError(`web config ${path}: ${r.issues.map((i) => `${v.getDotPath(i) ?? ''} ${i.message}`.trim()).join('; ')}`);
  const base = dirname(path);
  const abs = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const out: WebConfig = { users: r.output.basic_auth_users ?? {} };
  const tls = r.output.tls_server_config;
  if (tls) {
    try {
      out.tls = { cert: readFileSync(abs(tls.cert_file)), key: readFileSync(abs(tls.key_file)) };
    } catch (e) {
      throw new ConfigError(`web config ${path}: ${(e as Error).message}`);
    }
  }
  return out;
}

/**
 * Basic-auth middleware for the user map: 401 with `WWW-Authenticate: Basic` and no data on a
 * missing or wrong password. Successful credentials are remembered (as SHA-256 digests) so bcrypt runs
 * once per credential, as exporter-toolkit's cache does. An unknown user costs one bcrypt
 * comparison too (against a configured hash, result ignored), so the answer time does not tell
 * which user names exist. No users = no middleware.
 */
export function basicAuthMiddleware(users: Record<string, string>): MiddlewareHandler | undefined {
  if (Object.keys(users).length === 0) return undefined;
  const good = new Set<string>();
  const decoy = Object.values(users)[0]!;
  return async (c, next) => {
    const header = c.req.header('authorization') ?? '';
    const m = /^Basic\s+(.+)$/i.exec(header);
    if (m) {
      const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) {
        const user = decoded.slice(0, colon);
        const pass = decoded.slice(colon + 1);
        const hash = Object.hasOwn(users, user) ? users[user] : undefined;
        if (hash === undefined) await bcrypt.compare(pass, decoy);
        if (hash !== undefined) {
          const key = createHash('sha256').update(`${user}\u0000${pass}\u0000${hash}`).digest('hex');
          if (good.has(key) || (await bcrypt.compare(pass, hash))) {
            good.add(key);
            return next();
          }
        }
      }
    }
    return c.body('Unauthorized', 401, { 'WWW-Authenticate': 'Basic', 'Content-Type': 'text/plain; charset=utf-8' });
  };
}
