/** hactl discarded (src/ctl/discarded.ts) on the in-process DCS, against tiny member APIs answering GET /discarded. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runDiscarded } from '../../src/ctl/discarded.ts';
import { InMemoryDcs, type InMemoryStore } from '../../src/dcs/memory.ts';
import type { Receipt } from '../../src/domain/discarded.ts';
import { memberData, memorySession } from './fixtures.ts';

const stores: InMemoryStore[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) s.close();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

const receipt: Receipt = {
  version: 1,
  member: 'node2',
  at: '2026-11-27T04:00:00.000Z',
  action: 'rewind',
  leader: 'node1',
  leaderTimeline: 2,
  reason: 'diverged from leader node1: local WAL (ends at 800) goes past the switch point (500) of timeline 1',
  ranges: [{ timeline: 1, from: '0/1F4', to: '0/320', bytes: 300 }],
  counts: { records: 3, transactions: 2, committed: 1, aborted: 0, prepared: 0, unfinished: 1, bytes: 152 },
  transactions: [
    {
      xid: 900,
      status: 'committed',
      at: '2026-11-27T03:59:59.000Z',
      relations: ['1663/5/16384'],
      firstLsn: '0/208',
      lastLsn: '0/258',
      records: 2,
    },
    { xid: 901, status: 'unfinished', relations: ['1663/5/16384'], firstLsn: '0/2BC', lastLsn: '0/2BC', records: 1 },
  ],
  relationNames: { '1663/5/16384': 'postgres.public.t' },
};

/** A member API answering GET /discarded with `body` (status 200), or `status` alone. */
async function memberApi(body: unknown, status = 200): Promise<string> {
  const srv = createServer((req, res) => {
    res.statusCode = req.url === '/discarded' ? status : 404;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}/ha`;
}

async function cluster(apiUrls: Record<string, string>) {
  const m = await memorySession();
  stores.push(m.store);
  await m.other.initialize('7300000000000000001', { create: true });
  for (const [i, name] of ['node1', 'node2'].entries()) {
    const d = new InMemoryDcs({ store: m.store, namespace: '/service/', scope: 'demo', name, ttlSeconds: 30, retryTimeoutMs: 1000 });
    await d.start({ watch: false });
    await d.touchMember(memberData(5432 + i, { role: i === 0 ? 'primary' : 'replica', api_url: apiUrls[name]! }));
    if (i === 0) await d.attemptToAcquireLeader();
  }
  return m;
}

describe('hactl discarded', () => {
  it('one row per receipt, every member asked; the cluster name alone is not taken for a member', async () => {
    const { session, io } = await cluster({ node1: await memberApi([]), node2: await memberApi([receipt]) });
    await runDiscarded(session, { members: [], format: 'pretty', transactions: false });
    const text = io.lines.join('\n');
    expect(text).toContain('| Member');
    expect(text).toMatch(
      /\| node2 +\| 2026-11-27T04:00:00\.000Z \| rewind +\| node1 +\| +2 \| tl 1 0\/1F4-0\/320 \(300 B\) \| +2 \| +1 \| +0 \| +1 \|/,
    );
    io.lines.length = 0;
    await runDiscarded(session, { members: ['demo'], format: 'tsv', transactions: false });
    expect(io.lines).toHaveLength(2);
  });

  it('--transactions: one row per transaction, relation names where the receipt resolved them', async () => {
    const { session, io } = await cluster({ node1: await memberApi([]), node2: await memberApi([receipt]) });
    await runDiscarded(session, { members: ['node2'], format: 'tsv', transactions: true });
    expect(io.lines[0]).toBe('Member\tTaken\tXID\tStatus\tAt\tRelations\tFirst LSN\tLast LSN\tRecords');
    expect(io.lines.slice(1)).toEqual([
      'node2\t2026-11-27T04:00:00.000Z\t900\tcommitted\t2026-11-27T03:59:59.000Z\tpostgres.public.t\t0/208\t0/258\t2',
      'node2\t2026-11-27T04:00:00.000Z\t901\tunfinished\t\tpostgres.public.t\t0/2BC\t0/2BC\t1',
    ]);
  });

  it('json prints the receipts themselves; nothing kept says so in pretty', async () => {
    const { session, io } = await cluster({ node1: await memberApi([]), node2: await memberApi([receipt]) });
    await runDiscarded(session, { members: [], format: 'json', transactions: false });
    expect(JSON.parse(io.lines[0]!)).toEqual([receipt]);
    io.lines.length = 0;
    await runDiscarded(session, { members: ['node1'], format: 'pretty', transactions: false });
    expect(io.lines).toEqual(['No receipts: no member discarded any transaction.']);
  });

  it('a member that cannot be read is named, the others printed, and the command fails (exit 1)', async () => {
    const { session, io } = await cluster({ node1: 'http://127.0.0.1:1/ha', node2: await memberApi([receipt]) });
    await expect(runDiscarded(session, { members: [], format: 'tsv', transactions: false })).rejects.toMatchObject({
      exitCode: 1,
      message: 'could not read the receipts of member node1',
    });
    expect(io.errors[0]).toMatch(/^member node1 is not reachable at http:\/\/127\.0\.0\.1:1/);
    expect(io.lines).toHaveLength(2);
    const bad = await cluster({ node1: await memberApi({ not: 'a list' }), node2: await memberApi([], 500) });
    // Replicas first, the leader last (selectMembers).
    await expect(runDiscarded(bad.session, { members: [], format: 'tsv', transactions: false })).rejects.toThrow(
      'could not read the receipts of members node2, node1',
    );
    expect(bad.io.errors).toEqual([
      'member node2: GET /discarded answered 500 ([])',
      'member node1: GET /discarded did not answer a JSON array',
    ]);
  });
});
