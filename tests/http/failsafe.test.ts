import { describe, expect, it } from 'vitest';
import { answerFailsafe } from '../../src/domain/failsafe.ts';
import type { NodeSnapshot } from '../../src/domain/snapshot.ts';
import { appFor, config, FakeCommands, primaryLeader, send, streamingReplica } from './fixtures.ts';

const body = { name: 'pg-1', conn_url: 'postgres://10.0.0.1:5432/postgres', api_url: 'http://10.0.0.1:8008/ha', slots: { 'pg-2': 100 } };

/** Commands whose acceptFailsafe decides as the node does (src/domain/failsafe.ts) from the snapshot. */
function withFailsafe(s: NodeSnapshot) {
  const c = new FakeCommands() as FakeCommands & {
    acceptFailsafe: (b: Record<string, unknown>) => { status: number; text: string; lsn?: string };
  };
  const seen: Record<string, unknown>[] = [];
  c.acceptFailsafe = (b) => {
    seen.push(b);
    const { answer } = answerFailsafe(
      s.config,
      { name: s.name, runningPrimary: s.role === 'primary' && s.state === 'running', holdsLock: false, promoting: false },
      b,
    );
    return answer.status === 200 ? { ...answer, lsn: '50331744' } : answer;
  };
  return { c, seen };
}

async function post(s: NodeSnapshot, b: unknown, commands?: FakeCommands) {
  const { app } = appFor(s, commands ?? withFailsafe(s).c);
  const res = await send(app, 'POST', '/failsafe', b);
  return { status: res.status, text: await res.text(), lsn: res.headers.get('lsn') };
}

describe('POST /failsafe', () => {
  const on = (s: NodeSnapshot): NodeSnapshot => ({ ...s, config: config({ failsafe_mode: true }) });

  it('a replica in failsafe mode accepts the leader: 200 Accepted with its lsn', async () => {
    const s = on(streamingReplica());
    const { c, seen } = withFailsafe(s);
    expect(await post(s, body, c)).toEqual({ status: 200, text: 'Accepted', lsn: '50331744' });
    expect(seen).toEqual([body]);
  });
  it('a running primary answers 500 Running as a leader', async () => {
    expect(await post(on(primaryLeader({ name: 'pg-2' })), body)).toMatchObject({ status: 500, text: 'Running as a leader' });
  });
  it('failsafe mode off, or a node without the command: 502', async () => {
    expect((await post(streamingReplica(), body)).status).toBe(502);
    expect((await post(on(streamingReplica()), body, new FakeCommands())).status).toBe(502);
  });
  it('a body that is not {name, conn_url, api_url}: 400', async () => {
    expect(await post(on(streamingReplica()), { name: 'x' })).toMatchObject({ status: 400, text: 'conn_url must be a non-empty string' });
    expect((await post(on(streamingReplica()), '[1]')).status).toBe(400);
  });
  it('other methods: 405 with Allow', async () => {
    const { app } = appFor(on(streamingReplica()));
    const res = await send(app, 'GET', '/failsafe');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, OPTIONS');
  });
});
