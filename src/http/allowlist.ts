/**
 * Who may send unsafe requests (patroni.md §1.2 check 1): `restapi.allowlist` (IP addresses,
 * CIDRs, host names) and, with `allowlist_include_members`, the hosts of every member's
 * api_url in the node's DCS view. Matching uses Node's `net.BlockList` (addresses and subnets).
 * Host names of the allowlist are resolved when it is compiled (start, reload); members' host
 * names are resolved on demand and cached for MEMBER_DNS_TTL_MS.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** How long a member's resolved host name is reused, ms. */
export const MEMBER_DNS_TTL_MS = 30_000;

/** Resolves a host name to every address (default: the system resolver, `dns.lookup` all). */
export type Resolve = (host: string) => Promise<string[]>;

const systemResolve: Resolve = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

/** `::ffff:1.2.3.4` → `1.2.3.4`; brackets of `[::1]` removed; other text unchanged. */
export function normalizeAddress(address: string): string {
  const a = address.replace(/^\[|\]$/g, '');
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  return m ? m[1]! : a;
}

function familyOf(address: string): 'ipv4' | 'ipv6' | undefined {
  const f = isIP(address);
  return f === 4 ? 'ipv4' : f === 6 ? 'ipv6' : undefined;
}

/** Error in an allowlist entry: names the entry (`restapi.allowlist: "10.0.0.0/33" is not …`). */
export class AllowlistError extends Error {
  override readonly name = 'AllowlistError';
}

/** A compiled allowlist. */
export interface Allowlist {
  /** True when `address` (as the socket reports it) is allowed; `memberHosts` are the members' api_url hosts. */
  allows(address: string | undefined, memberHosts: readonly string[]): Promise<boolean>;
}

/**
 * Compiles `entries` (addresses, `addr/prefix` CIDRs, host names) and `includeMembers`.
 * Throws AllowlistError for a malformed CIDR or a host name that does not resolve.
 */
export async function compileAllowlist(
  entries: readonly string[],
  includeMembers: boolean,
  resolve: Resolve = systemResolve,
): Promise<Allowlist> {
  const list = new BlockList();
  for (const raw of entries) {
    const entry = normalizeAddress(raw.trim());
    const slash = entry.indexOf('/');
    if (slash >= 0) {
      const net = normalizeAddress(entry.slice(0, slash));
      const prefix = Number(entry.slice(slash + 1));
      const family = familyOf(net);
      const max = family === 'ipv4' ? 32 : 128;
      if (!family || !/^\d+$/.test(entry.slice(slash + 1)) || prefix > max) {
        throw new AllowlistError(`restapi.allowlist: "${raw}" is not a CIDR (address/prefix)`);
      }
      list.addSubnet(net, prefix, family);
      continue;
    }
    const family = familyOf(entry);
    if (family) {
      list.addAddress(entry, family);
      continue;
    }
    let addresses: string[];
    try {
      addresses = await resolve(entry);
    } catch (e) {
      throw new AllowlistError(`restapi.allowlist: host "${raw}" does not resolve (${e instanceof Error ? e.message : String(e)})`);
    }
    for (const a of addresses.map(normalizeAddress)) {
      const f = familyOf(a);
      if (f) list.addAddress(a, f);
    }
  }
  const memberCache = new Map<string, { atMs: number; addresses: string[] }>();
  const memberAddresses = async (host: string): Promise<string[]> => {
    const h = normalizeAddress(host);
    if (familyOf(h)) return [h];
    const hit = memberCache.get(h);
    if (hit && Date.now() - hit.atMs < MEMBER_DNS_TTL_MS) return hit.addresses;
    const addresses = (await resolve(h).catch(() => [] as string[])).map(normalizeAddress);
    memberCache.set(h, { atMs: Date.now(), addresses });
    return addresses;
  };
  return {
    async allows(address, memberHosts) {
      if (address === undefined) return false;
      const a = normalizeAddress(address);
      const family = familyOf(a);
      if (!family) return false;
      if (list.check(a, family)) return true;
      if (!includeMembers) return false;
      for (const host of memberHosts) {
        if ((await memberAddresses(host)).includes(a)) return true;
      }
      return false;
    },
  };
}
