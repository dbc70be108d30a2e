/**
 * The node's implementation of the HTTP API's write commands (src/http/commands.ts). Each one
 * goes through the DCS adapter or sends an event to the node's machines; none runs SQL itself.
 */
import type { ClusterView, FailoverRequest } from '../../domain/cluster.ts';
import type { ScheduledRestartData } from '../../domain/member.ts';
import type { Dcs } from '../../dcs/dcs.ts';
import type { CommandOutcome, NodeCommands, ReinitializeOptions } from '../../http/commands.ts';
import type { HaNode } from '../ha-node.ts';
import { fetchStatusDocument } from '../cycle/peers.ts';

/**
 * Builds NodeCommands over a node and its DCS. `reloadConfig` re-reads ha.yml (POST /reload);
 * `fetchStatus` reads a member's /ha (default: plain fetchStatusDocument with a 2 s timeout; the
 * agent passes one with its TLS settings).
 */
export function nodeCommands(
  node: HaNode,
  dcs: Dcs,
  reloadConfig: () => Promise<void>,
  fetchStatus: (apiUrl: string) => Promise<Record<string, unknown> | undefined> = (apiUrl) => fetchStatusDocument(apiUrl, 2000),
): NodeCommands {
  return {
    readCluster: (): Promise<ClusterView> => dcs.refresh(),
    writeConfig: (value: Record<string, unknown>, rev?: string) => dcs.setConfig(value, rev),
    writeFailover: (value: FailoverRequest, rev?: string) => dcs.setFailover(value, rev),
    fetchMemberStatus: fetchStatus,
    wake: () => node.wake(),
    restart: (timeoutMs?: number): Promise<CommandOutcome> => node.restartNow(timeoutMs),
    scheduleRestart: (plan: ScheduledRestartData) => node.scheduleRestart(plan),
    cancelRestart: () => node.cancelRestart(),
    reload: reloadConfig,
    reinitialize: (opts: ReinitializeOptions): Promise<CommandOutcome> => node.reinitialize(opts),
    acceptFailsafe: (body: Record<string, unknown>) => node.acceptFailsafe(body),
    discarded: () => node.discarded(),
  };
}
