/**
 * The allowlist of `/probe` targets given as a DSN (docs/exporter.md "Multi-target: /probe"). Pure:
 * entries are parsed once, and a host and port are matched against them as written in the
 * request (no DNS resolution: a host name entry trusts the name, an address or CIDR entry matches
 * only targets written as addresses).
 *
 * Entry forms: `host`, `host:port`, `*.example.com` (any sub-domain, not the bare domain),
 * `10.0.0.7`, `10.0.0.0/24`, `[fd00::1]:5432`, `fd00::/8`, `[fd00::/8]:5432`. Without a port
 * every port matches.
 */
import { BlockList, isIP } from 'node:net';

/** One parsed allowlist entry. */
export interface AllowEntry {
  /** The entry as written (for messages). */
  text: string;
  /** Lower-case host name, `*.`-prefixed pattern, address or CIDR. */
  host: string;
  /** Port that must match, or undefined for any. */
  port?: number;
  /** Set when `host` is an address or a CIDR: the matcher. */
  net?: BlockList;
}

/** Parses a port text: 1..65535, else undefined. */
function portOf(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/** A block list holding one address or CIDR, or undefined when `host` is neither. */
function netOf(host: string): BlockList | undefined {
  const slash = host.indexOf('/');
  const addr = slash < 0 ? host : host.slice(0, slash);
  const family = isIP(addr);
  if (family === 0) return undefined;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  if (slash < 0) list.addAddress(addr, type);
  else {
    const bits = Number(host.slice(slash + 1));
    if (!/^\d{1,3}$/.test(host.slice(slash + 1)) || bits > (family === 4 ? 32 : 128)) throw new Error(`invalid prefix length in ${host}`);
    list.addSubnet(addr, bits, type);
  }
  return list;
}

const HOST_NAME = /^(\*\.)?[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$/;

/**
 * Parses one allowlist entry (forms in the module comment). Throws Error naming the entry when it
 * is none of them.
 */
export function parseAllowEntry(text: string): AllowEntry {
  const t = text.trim().toLowerCase();
  let host = t;
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (bracket) {
    host = bracket[1]!;
    if (bracket[2] !== undefined) {
      port = portOf(bracket[2]);
      if (port === undefined) throw new Error(`allowlist entry ${text}: invalid port`);
    }
  } else if ((t.match(/:/g) ?? []).length === 1) {
    const i = t.indexOf(':');
    host = t.slice(0, i);
    port = portOf(t.slice(i + 1));
    if (port === undefined) throw new Error(`allowlist entry ${text}: invalid port`);
  }
  if (host === '') throw new Error(`allowlist entry ${text}: empty host`);
  let net: BlockList | undefined;
  try {
    net = netOf(host);
  } catch (e) {
    throw new Error(`allowlist entry ${text}: ${(e as Error).message}`);
  }
  if (!net && !HOST_NAME.test(host)) throw new Error(`allowlist entry ${text}: not a host name, address or CIDR`);
  return { text, host, ...(port !== undefined ? { port } : {}), ...(net ? { net } : {}) };
}

/**
 * Whether a target host (as written, brackets removed) and port match an entry of `list`.
 * Host names compare case-insensitively; `*.example.com` matches `a.example.com` and
 * `a.b.example.com`, not `example.com`; addresses match address and CIDR entries only.
 */
export function allowed(list: readonly AllowEntry[], host: string, port: number): boolean {
  const h = host.toLowerCase();
  const family = isIP(h);
  for (const e of list) {
    if (e.port !== undefined && e.port !== port) continue;
    if (family !== 0) {
      if (e.net?.check(h, family === 4 ? 'ipv4' : 'ipv6')) return true;
      continue;
    }
    if (e.net) continue;
    if (e.host.startsWith('*.') ? h.endsWith(e.host.slice(1)) && h.length > e.host.length - 1 : h === e.host) return true;
  }
  return false;
}
