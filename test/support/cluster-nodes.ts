import { Redis } from 'ioredis';
import { until } from '../creation/support.js';

/** A node of a Redis Cluster as CLUSTER NODES tells it. */
export type ClusterNode = { id: string; port: number; flags: string[]; master: string; slots: string[] };

/** CLUSTER NODES as the node on `askPort` sees it. */
export async function clusterNodes(askPort: number): Promise<ClusterNode[]> {
  const probe = new Redis(askPort, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await probe.connect();
    return String(await probe.cluster('NODES'))
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      .map((f) => ({
        id: f[0]!,
        port: Number(f[1]!.split(':')[1]!.split('@')[0]),
        flags: f[2]!.split(','),
        master: f[3]!,
        slots: f.slice(8),
      }));
  } finally {
    probe.disconnect();
  }
}

/** Whether the node serves the hash slot. */
export const serves = (node: ClusterNode, slot: number) =>
  node.slots.some((range) => {
    const [from, to] = range.split('-').map(Number);
    return slot >= from! && slot <= (to ?? from)!;
  });

/** The healthy master serving the slot, as the node on `askPort` sees it (null: none yet). */
export async function masterOf(askPort: number, slot: number): Promise<ClusterNode | null> {
  const nodes = await clusterNodes(askPort).catch(() => []);
  return (
    nodes.find((n) => n.flags.includes('master') && !n.flags.includes('fail') && serves(n, slot)) ?? null
  );
}

/** Waits until a master other than `formerId` serves the slot, as the node on `askPort` sees it (a failover). */
export function awaitNewMaster(
  askPort: number,
  slot: number,
  formerId: string,
  what: string,
  timeoutMs: number,
) {
  return until(
    async () => {
      const owner = await masterOf(askPort, slot);
      return owner && owner.id !== formerId ? owner : null;
    },
    what,
    timeoutMs,
  );
}

/** The hash slot of a key (or a `{tag}`), as the node on `askPort` computes it. */
export async function keySlot(askPort: number, key: string): Promise<number> {
  const probe = new Redis(askPort, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await probe.connect();
    return Number(await probe.cluster('KEYSLOT', key));
  } finally {
    probe.disconnect();
  }
}

/** The key's slot, the master serving it and that master's replica, as the node on `askPort` sees them. */
export async function holdersOf(
  askPort: number,
  key: string,
): Promise<{ slot: number; master: ClusterNode; replica: ClusterNode }> {
  const slot = await keySlot(askPort, key);
  const nodes = await clusterNodes(askPort);
  const master = nodes.find((n) => n.flags.includes('master') && serves(n, slot));
  if (!master) throw new Error(`no master serves slot ${slot}`);
  const replica = nodes.find((n) => n.master === master.id);
  if (!replica) throw new Error(`the master of slot ${slot} (:${master.port}) has no replica`);
  return { slot, master, replica };
}
