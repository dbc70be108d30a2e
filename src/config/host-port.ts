/**
 * `host:port` addresses as written in ha.yml (`restapi.listen`, `database.listen`,
 * `etcd3.hosts[]`, the `*_connect_address` keys). IPv6 hosts are written in brackets
 * (`[::1]:5432`), as in URLs; the brackets are not part of the returned host.
 */

/** A parsed address. `port` is an integer in 1..65535. */
export interface HostPort {
  host: string;
  port: number;
}

/** Thrown by {@link parseHostPort}; `code` is always `EHOSTPORT`. */
export class HostPortError extends Error {
  readonly code = 'EHOSTPORT';
  constructor(message: string) {
    super(message);
    this.name = 'HostPortError';
  }
}

/**
 * Explains why `text` is not a valid `host:port`, or returns undefined when it is.
 * Used by the config schemas to report a problem without throwing.
 */
export function hostPortProblem(text: string): string | undefined {
  const r = split(text);
  return typeof r === 'string' ? r : undefined;
}

/**
 * Parses `host:port` (`127.0.0.1:5432`, `db1.example:5432`, `[::1]:8008`, `*:5432`).
 * Errors: throws {@link HostPortError} when the port is missing, not an integer, or outside
 * 1..65535, or the host is empty or contains whitespace.
 */
export function parseHostPort(text: string): HostPort {
  const r = split(text);
  if (typeof r === 'string') throw new HostPortError(`"${text}": ${r}`);
  return r;
}

/** Formats an address back to text, bracketing IPv6 hosts. */
export function formatHostPort(a: HostPort): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/** True for addresses that mean "every interface" and so cannot be connected to by others. */
export function isWildcardHost(host: string): boolean {
  return host === '*' || host === '0.0.0.0' || host === '::' || host === '';
}

function split(text: string): HostPort | string {
  const t = text.trim();
  let host: string;
  let portText: string;
  if (t.startsWith('[')) {
    const close = t.indexOf(']');
    if (close < 0) return 'must be host:port (IPv6 host without closing "]")';
    host = t.slice(1, close);
    if (t[close + 1] !== ':') return 'must be host:port (port missing)';
    portText = t.slice(close + 2);
  } else {
    const colon = t.lastIndexOf(':');
    if (colon < 0) return 'must be host:port (port missing)';
    host = t.slice(0, colon);
    portText = t.slice(colon + 1);
    if (host.includes(':')) return 'must be host:port (write IPv6 hosts in brackets: [::1]:5432)';
  }
  if (host === '') return 'must be host:port (host missing)';
  if (/\s/.test(host)) return 'must be host:port (host contains whitespace)';
  if (!/^\d+$/.test(portText)) return `must be host:port (port "${portText}" is not an integer)`;
  const port = Number(portText);
  if (port < 1 || port > 65535) return `port ${port} is outside 1..65535`;
  return { host, port };
}
