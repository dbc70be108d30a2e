/**
 * `hactl backup` (src/ctl/member-actions.ts runBackup; docs/backups.md "Backups") on the in-process
 * DCS with a tiny member API: which member it runs on (the named one, else a running replica,
 * else the leader), the body it posts, and how an answer is printed and exits.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { backupMember, runBackup } from '../../src/ctl/member-actions.ts';
import type { InMemoryStore } from '../../src/dcs/memory.ts';
import type { MemberData } from '../../src/domain/member.ts';
import { memoryCluster, threeNodeView } from './fixtures.ts';

const stores: InMemoryStore[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) s.close();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A member API answering POST /backup with `status` and `text`; records the bodies it got. */
async function memberApi(status: number, text: string): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/backup') bodies.push(body);
      res.statusCode = req.url === '/backup' ? status : 404;
      res.end(text);
    });
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/ha`, bodies };
}

/** memoryCluster, its store closed after each test. */
async function cluster(data: Record<string, Partial<MemberData>> = {}) {
  const m = await memoryCluster(data);
  stores.push(m.store);
  return m;
}

describe('hactl backup', () => {
  it('runs on the named member, else a running replica, else the leader', () => {
    const view = threeNodeView();
    expect(backupMember(view, 'demo', 'node1').name).toBe('node1');
    expect(backupMember(view, 'demo', undefined).name).toBe('node2');
    const stopped = threeNodeView({
      members: view.members.map((m) => (m.name === 'node1' ? m : { ...m, data: { ...m.data, state: 'stopped' } })),
    });
    expect(backupMember(stopped, 'demo', undefined).name).toBe('node1');
    expect(() => backupMember(view, 'demo', 'node9')).toThrow(/node9/);
  });

  it('posts {"create": true} with --create and prints the answer; a failure exits 1 with the reason', async () => {
    const ok = await memberApi(200, 'backup done in 4.2 s');
    const { session, io } = await cluster({ node2: { api_url: ok.url } });
    await runBackup(session, { create: true });
    expect(ok.bodies.map((b) => JSON.parse(b))).toEqual([{ create: true }]);
    expect(io.lines).toEqual([
      'Running the backup on member node2 (creating the stanza first)',
      'Success: backup done in 4.2 s on member node2',
    ]);

    const bad = await memberApi(503, 'backup.command failed: sh exited 1: ERROR: [056]: unable to find primary cluster');
    const other = await cluster({ node3: { api_url: bad.url } });
    await expect(runBackup(other.session, { member: 'node3', create: false })).rejects.toThrow('backup failed on member node3');
    expect(bad.bodies.map((b) => JSON.parse(b))).toEqual([{}]);
    expect(other.io.lines.at(-1)).toBe(
      'Failed: backup on member node3, status code=503, (backup.command failed: sh exited 1: ERROR: [056]: unable to find primary cluster)',
    );
  });
});
