import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { waitForPort } from '../test/support/processes.js';
import { round } from './support.js';

/** What the capacity benchmark needs beyond the other scenarios: the CPU time of a whole PostgreSQL server. */

/**
 * CPU seconds used so far by every PostgreSQL process of the server (its backends, the ones that already
 * exited through the postmaster's children time). A whole-server figure: what else uses that server counts.
 */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (name !== 'postgres' && !name.startsWith('postgres:')) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime + stime; the postmaster (its parent is not postgres) adds its exited children's time.
      total += Number(f[11]) + Number(f[12]);
      const parent = readFileSync(`/proc/${f[1]}/stat`, 'utf8');
      if (!parent.includes('(postgres')) total += Number(f[13]) + Number(f[14]);
    } catch {
      // The process ended while being read.
    }
  }
  return total / 100;
}

/** CPU milliseconds per item, summed over groups of processes (a tier of several pods), between now and `perItemMs`. */
export function tierMeter(tiers: Record<string, Array<() => number | null>>) {
  const read = () =>
    Object.fromEntries(
      Object.entries(tiers).map(([tier, readers]) => [
        tier,
        readers.reduce<number | null>((sum, r) => {
          const v = r();
          return sum === null || v === null ? null : sum + v;
        }, 0),
      ]),
    );
  const before = read();
  return {
    perItemMs(items: number): Record<string, number | null> {
      const now = read();
      return Object.fromEntries(
        Object.keys(tiers).map((t) => {
          const a = before[t];
          const b = now[t];
          return [t, a == null || b == null ? null : round(((b - a) * 1000) / items, 2)];
        }),
      );
    },
  };
}

/** The pids of the processes whose command line names one of these ports (`redis-server 127.0.0.1:7100 [cluster]`). */
export function pidsListeningOn(ports: number[], command: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!cmdline.includes(command)) continue;
      if (ports.some((p) => new RegExp(`:${p}\\b`).test(cmdline))) pids.push(Number(entry));
    } catch {
      // The process ended while being read.
    }
  }
  return pids;
}

/**
 * HAProxy with the scaled topology's own configuration (deploy/haproxy.cfg) in front of the given web ports,
 * listening on `port`; answers once the load balancer accepts connections.
 */
export async function startHaproxy(port: number, webs: [number, number]) {
  const child = spawn('haproxy', ['-db', '-f', resolve(import.meta.dirname, '../deploy/haproxy.cfg')], {
    env: {
      ...process.env,
      LB_BIND: `127.0.0.1:${port}`,
      LB_WEB_1: `127.0.0.1:${webs[0]}`,
      LB_WEB_2: `127.0.0.1:${webs[1]}`,
    },
    stdio: 'ignore',
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await waitForPort(port);
  return {
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
