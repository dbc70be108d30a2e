/**
 * The isolation lab of the partition fault test and benchmark (reliability.md §3.1): a hub
 * namespace with a bridge, a veth from the root namespace (etcd, node2, node3) and one from node1's
 * namespace (node1's agent, PostgreSQL and fence under `ip netns exec`), all in a private /24 that
 * exists only on these veths (no default route, no NAT). The cut sets node1's bridge port down.
 * `destroy()` deletes both namespaces (their veths and the root end with them). createMemberLab
 * makes the same with several isolated members and an address of etcd's own (the quorum-failover
 * partition test); createNetLab is its one-member case.
 */
import { run, waitFor } from '../../support/processes.ts';
import { T } from '../faults/timing.ts';
import { TestCluster } from './cluster.ts';

export const PARTITION_LOG_RE = /leader|lock|promot|demot|fence|watchdog|diverg|clone|rewind|DCS|deadline|secondary/i;

/** The namespaces, veths and addresses of one isolation lab (see the header). */
export interface NetLab {
  hub: string;
  ns: string;
  /** The node's port on the hub bridge: the link the cut sets down. */
  hubPort: string;
  /** Root-namespace address (etcd and the other members). */
  rootIp: string;
  /** The isolated node's address inside its namespace. */
  nodeIp: string;
  subnet: string;
  /** Sets the node's link down (`isolate`) or up (`heal`). */
  isolate(): Promise<void>;
  heal(): Promise<void>;
  /** Deletes the namespaces (which deletes their veths and the root end) and the root veth. */
  destroy(): Promise<void>;
}

async function ip(args: string[]): Promise<string> {
  return run('ip', args);
}

/** One member's place in a lab: its namespace, address and port on the hub bridge. */
export interface LabMember {
  ns: string;
  ip: string;
  /** Its port on the hub bridge (the link `isolate` sets down). */
  hubPort: string;
}

/**
 * A lab with several isolated members (the quorum-failover partition test): each named member has
 * its own namespace and address on the hub bridge; the root namespace keeps `rootIp` (the members
 * not named, the test runner) and `etcdIp`, a second address of the same veth that only etcd is
 * reached at, so that a member can be cut from its peers but not from etcd.
 */
export interface MemberLab {
  hub: string;
  subnet: string;
  rootIp: string;
  etcdIp: string;
  members: Record<string, LabMember>;
  /** Sets the member's bridge port down (`isolate`): it reaches nothing and nothing reaches it; `heal` sets it up. */
  isolate(name: string): Promise<void>;
  heal(name: string): Promise<void>;
  /**
   * Cuts the member from these addresses only: a blackhole route to each in its namespace (no
   * packet of it reaches them; over TCP that cuts both directions, as no handshake or
   * acknowledgement comes back). `uncut` removes the routes.
   */
  cut(name: string, ips: string[]): Promise<void>;
  uncut(name: string, ips: string[]): Promise<void>;
  /** Deletes the namespaces (which deletes their veths and the root end) and the root veth. */
  destroy(): Promise<void>;
}

/**
 * Creates a lab with one namespace `ha-n<i>-<s>` per name (addresses .2, .3, … of a private /24),
 * the hub `ha-hub-<s>` with its bridge, and the root veth (.1, and .254 for etcd).
 */
export async function createMemberLab(names: string[]): Promise<MemberLab> {
  const s = (process.pid % 0xffff).toString(16);
  const x = 20 + (process.pid % 200);
  const hub = `ha-hub-${s}`;
  const rootEnd = `har${s}`;
  const rootHub = `hhr${s}`;
  const net = `10.213.${x}`;
  const members: Record<string, LabMember & { dev: string }> = {};
  names.forEach((name, i) => {
    members[name] = { ns: `ha-n${i + 1}-${s}`, ip: `${net}.${i + 2}`, hubPort: `hhn${i}${s}`, dev: `han${i}${s}` };
  });
  const m = (name: string) => {
    const x = members[name];
    if (!x) throw new Error(`${name} is not in the lab`);
    return x;
  };
  const routes = (verb: string) => async (name: string, ips: string[]) => {
    for (const a of ips) await ip(['-n', m(name).ns, 'route', verb, 'blackhole', `${a}/32`]);
  };
  const lab: MemberLab = {
    hub,
    subnet: `${net}.0/24`,
    rootIp: `${net}.1`,
    etcdIp: `${net}.254`,
    members,
    isolate: async (name) => void (await ip(['-n', hub, 'link', 'set', m(name).hubPort, 'down'])),
    heal: async (name) => void (await ip(['-n', hub, 'link', 'set', m(name).hubPort, 'up'])),
    cut: routes('add'),
    uncut: routes('del'),
    async destroy() {
      for (const a of [...Object.values(members).map((x) => ['netns', 'del', x.ns]), ['netns', 'del', hub], ['link', 'del', rootEnd]]) {
        await ip(a).catch(() => undefined);
      }
    },
  };
  try {
    await ip(['netns', 'add', hub]);
    await ip(['-n', hub, 'link', 'add', 'br0', 'type', 'bridge']);
    await ip(['-n', hub, 'link', 'set', 'br0', 'up']);
    await ip(['link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', rootHub]);
    await ip(['link', 'set', rootHub, 'netns', hub]);
    await ip(['-n', hub, 'link', 'set', rootHub, 'master', 'br0', 'up']);
    for (const a of [lab.rootIp, lab.etcdIp]) await ip(['addr', 'add', `${a}/24`, 'dev', rootEnd]);
    await ip(['link', 'set', rootEnd, 'up']);
    for (const x of Object.values(members)) {
      await ip(['netns', 'add', x.ns]);
      await ip(['link', 'add', x.dev, 'type', 'veth', 'peer', 'name', x.hubPort]);
      await ip(['link', 'set', x.dev, 'netns', x.ns]);
      await ip(['link', 'set', x.hubPort, 'netns', hub]);
      await ip(['-n', hub, 'link', 'set', x.hubPort, 'master', 'br0', 'up']);
      await ip(['-n', x.ns, 'link', 'set', 'lo', 'up']);
      await ip(['-n', x.ns, 'addr', 'add', `${x.ip}/24`, 'dev', x.dev]);
      await ip(['-n', x.ns, 'link', 'set', x.dev, 'up']);
    }
  } catch (e) {
    await lab.destroy();
    throw e;
  }
  return lab;
}

/** Creates the one-member lab of the partition test: node1 in `ha-n1-<s>` (createMemberLab). */
export async function createNetLab(): Promise<NetLab> {
  const lab = await createMemberLab(['node1']);
  const n1 = lab.members['node1']!;
  return {
    hub: lab.hub,
    ns: n1.ns,
    hubPort: n1.hubPort,
    rootIp: lab.rootIp,
    nodeIp: n1.ip,
    subnet: lab.subnet,
    isolate: () => lab.isolate('node1'),
    heal: () => lab.heal('node1'),
    destroy: () => lab.destroy(),
  };
}

/** A cluster whose node1 runs inside `lab.ns` (the others and etcd in the root namespace). */
export async function createPartitionCluster(lab: NetLab): Promise<TestCluster> {
  return TestCluster.create({
    nodes: 3,
    ttl: T.ttl,
    loopWait: T.loop_wait,
    retryTimeout: T.retry_timeout,
    dcsExtra: ['database: { use_db_rewind: true, remove_data_directory_on_diverged_timelines: true }'],
    hosts: { node1: lab.nodeIp, node2: lab.rootIp, node3: lab.rootIp },
    wrapCommand: { node1: ['ip', 'netns', 'exec', lab.ns] },
    etcdListenHosts: [lab.rootIp],
    etcdHosts: (port) => [`${lab.rootIp}:${port}`],
    pgHba: [`host all all ${lab.subnet} scram-sha-256`, `host replication replicator ${lab.subnet} scram-sha-256`],
  });
}

/** Starts node1 alone until it leads, then the others; resolves when the cluster settled. */
export async function startWithNode1Leading(c: TestCluster): Promise<void> {
  c.start('node1');
  await waitFor(
    async () => ((await c.leader()) === 'node1' && (await c.get('node1', '/primary')).status === 200) || undefined,
    120_000,
    'node1 leading',
  );
  c.start('node2');
  c.start('node3');
  const l = await c.settled(120_000, PARTITION_LOG_RE);
  if (l !== 'node1') throw new Error(`expected node1 to lead, got ${l}`);
}
