/**
 * The isolation lab of the partition fault test and benchmark (reliability.md §3.1): a hub
 * namespace with a bridge, a veth from the root namespace (etcd, node2, node3) and one from node1's
 * namespace (node1's agent, PostgreSQL and fence under `ip netns exec`), all in a private /24 that
 * exists only on these veths (no default route, no NAT). The cut sets node1's bridge port down.
 * `destroy()` deletes both namespaces (their veths and the root end with them).
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

/** Creates the lab: namespaces `ha-hub-<s>` and `ha-n1-<s>`, a bridge in the hub, two veth pairs. */
export async function createNetLab(): Promise<NetLab> {
  const s = (process.pid % 0xffff).toString(16);
  const x = 20 + (process.pid % 200);
  const hub = `ha-hub-${s}`;
  const ns = `ha-n1-${s}`;
  const rootEnd = `har${s}`;
  const rootHub = `hhr${s}`;
  const nodeEnd = `han${s}`;
  const nodeHub = `hhn${s}`;
  const subnet = `10.213.${x}.0/24`;
  const rootIp = `10.213.${x}.1`;
  const nodeIp = `10.213.${x}.2`;
  const lab: NetLab = {
    hub,
    ns,
    hubPort: nodeHub,
    rootIp,
    nodeIp,
    subnet,
    isolate: async () => void (await ip(['-n', hub, 'link', 'set', nodeHub, 'down'])),
    heal: async () => void (await ip(['-n', hub, 'link', 'set', nodeHub, 'up'])),
    async destroy() {
      for (const a of [
        ['netns', 'del', ns],
        ['netns', 'del', hub],
        ['link', 'del', rootEnd],
      ]) {
        await ip(a).catch(() => undefined);
      }
    },
  };
  try {
    await ip(['netns', 'add', hub]);
    await ip(['netns', 'add', ns]);
    await ip(['-n', hub, 'link', 'add', 'br0', 'type', 'bridge']);
    await ip(['-n', hub, 'link', 'set', 'br0', 'up']);
    await ip(['link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', rootHub]);
    await ip(['link', 'set', rootHub, 'netns', hub]);
    await ip(['link', 'add', nodeEnd, 'type', 'veth', 'peer', 'name', nodeHub]);
    await ip(['link', 'set', nodeEnd, 'netns', ns]);
    await ip(['link', 'set', nodeHub, 'netns', hub]);
    for (const p of [rootHub, nodeHub]) await ip(['-n', hub, 'link', 'set', p, 'master', 'br0', 'up']);
    await ip(['addr', 'add', `${rootIp}/24`, 'dev', rootEnd]);
    await ip(['link', 'set', rootEnd, 'up']);
    await ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    await ip(['-n', ns, 'addr', 'add', `${nodeIp}/24`, 'dev', nodeEnd]);
    await ip(['-n', ns, 'link', 'set', nodeEnd, 'up']);
  } catch (e) {
    await lab.destroy();
    throw e;
  }
  return lab;
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
