/** Shared fixtures of the hactl unit tests: a ClusterView builder, a scripted CtlIo, an in-memory Session. */
import type { ClusterView } from '../../src/domain/cluster.ts';
import type { MemberData } from '../../src/domain/member.ts';
import { InMemoryDcs, InMemoryStore } from '../../src/dcs/memory.ts';
import type { CtlIo } from '../../src/ctl/io.ts';
import type { Session } from '../../src/ctl/session.ts';

/** Member data of a running member on 127.0.0.1:<pgPort>. */
export function memberData(pgPort: number, extra: Partial<MemberData> = {}): MemberData {
  return {
    conn_url: `postgres://127.0.0.1:${pgPort}/postgres`,
    api_url: `http://127.0.0.1:${pgPort + 1000}/ha`,
    state: 'running',
    role: 'replica',
    version: '0.1.0',
    timeline: 1,
    ...extra,
  };
}

/** A 3-member view: node1 leads at LSN 0/3000000, node2 and node3 stream (node3 2 MiB behind). */
export function threeNodeView(extra: Partial<ClusterView> = {}): ClusterView {
  const optime = 0x3000000;
  return {
    initialize: '7300000000000000001',
    config: { value: { ttl: 30, loop_wait: 10 }, revision: '5' },
    leader: { name: 'node1', leaseId: '1', revision: '7', createRevision: '7' },
    status: { optime },
    history: [],
    members: [
      { name: 'node1', data: memberData(5432, { role: 'primary', xlog_location: optime }) },
      {
        name: 'node2',
        data: memberData(5433, { receive_lsn: optime, replay_lsn: optime, xlog_location: optime, replication_state: 'streaming' }),
      },
      {
        name: 'node3',
        data: memberData(5434, {
          receive_lsn: optime - 2 * 1048576,
          replay_lsn: optime - 2 * 1048576,
          xlog_location: optime,
          replication_state: 'streaming',
        }),
      },
    ],
    ...extra,
  };
}

/** A CtlIo that records output and answers prompts from a list (undefined = end of input). */
export function scriptedIo(answers: Array<string | undefined> = []): CtlIo & { lines: string[]; errors: string[]; questions: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  const questions: string[] = [];
  return {
    lines,
    errors,
    questions,
    isTty: false,
    out: (l) => void lines.push(l),
    err: (l) => void errors.push(l),
    ask: async (q) => {
      questions.push(q);
      return answers.shift();
    },
    close: () => {},
  };
}

/** A Session on an in-memory store, with a scripted terminal. Call `store.close()` afterwards. */
export async function memorySession(answers: Array<string | undefined> = []): Promise<{
  session: Session;
  io: ReturnType<typeof scriptedIo>;
  store: InMemoryStore;
  other: InMemoryDcs;
}> {
  const store = new InMemoryStore();
  const opts = { store, namespace: '/service/', scope: 'demo', ttlSeconds: 30, retryTimeoutMs: 1000 };
  const dcs = new InMemoryDcs({ ...opts, name: 'hactl' });
  const other = new InMemoryDcs({ ...opts, name: 'other' });
  await dcs.start({ lease: false, watch: false });
  await other.start({ lease: false, watch: false });
  const io = scriptedIo(answers);
  return { session: { scope: 'demo', dcs, io, now: Date.now, sleep: async () => {} }, io, store, other };
}

/**
 * A memorySession whose store holds node1 (leader, primary) on 5432 and node2, node3 replicas on
 * 5433/5434; `data` overrides member keys. Call `store.close()` afterwards.
 */
export async function memoryCluster(data: Record<string, Partial<MemberData>> = {}): ReturnType<typeof memorySession> {
  const m = await memorySession();
  await m.other.initialize('7300000000000000001', { create: true });
  for (const [i, name] of ['node1', 'node2', 'node3'].entries()) {
    const d = new InMemoryDcs({ store: m.store, namespace: '/service/', scope: 'demo', name, ttlSeconds: 30, retryTimeoutMs: 1000 });
    await d.start({ watch: false });
    await d.touchMember(memberData(5432 + i, { role: i === 0 ? 'primary' : 'replica', ...data[name] }));
    if (i === 0) await d.attemptToAcquireLeader();
  }
  return m;
}
