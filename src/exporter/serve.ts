/** Serving the exporter app over HTTP or HTTPS with @hono/node-server. */
import { createServer as createHttpsServer } from 'node:https';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';

/** Where to listen, and optional TLS material (PEM). */
export interface ListenOptions {
  host: string;
  port: number;
  tls?: { cert: Buffer; key: Buffer };
}

/**
 * Parses `host:port`, `:port` (all interfaces) or `[v6]:port`. Throws Error on anything else.
 */
export function parseListenAddress(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new Error(`invalid listen address ${addr}: expected host:port`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`invalid listen address ${addr}: port out of range`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** Starts listening; resolves with the server once it accepts connections. */
export function listen(app: Hono, opts: ListenOptions): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch: app.fetch,
        hostname: opts.host,
        port: opts.port,
        ...(opts.tls ? { createServer: createHttpsServer, serverOptions: { cert: opts.tls.cert, key: opts.tls.key } } : {}),
      },
      () => resolve(server),
    );
    server.once('error', reject);
  });
}
