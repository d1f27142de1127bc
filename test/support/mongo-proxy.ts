import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a MongoDB-compatible server that can hold one command: it reads the client's
 * stream as wire-protocol messages (OP_MSG), and when a held command (e.g. `insert` into a collection)
 * comes by, it stops forwarding that connection's traffic until `release()`. With it a test stretches one
 * writer between its read and its write as long as it likes (a long GC pause, a slow network), with no
 * switch in the code under test.
 */
export type HoldingProxy = {
  url: (database: string) => string;
  /** Holds the next `command` on `collection`; resolves once it is held. */
  holdNext(command: string, collection: string): Promise<void>;
  release(): void;
  close(): Promise<void>;
};

const OP_MSG = 2013;

/** The first element of an OP_MSG's body document: the command name and, for a string value, its value. */
function commandOf(message: Buffer): { name: string; value: string | null } | null {
  if (message.readInt32LE(12) !== OP_MSG) return null;
  let at = 20; // header (16) + flagBits (4)
  if (message[at] !== 0) return null; // section kind 0: the body document
  at += 1 + 4; // kind, document length
  const type = message[at]!;
  const nameEnd = message.indexOf(0, at + 1);
  const name = message.toString('utf8', at + 1, nameEnd);
  if (type !== 0x02) return { name, value: null };
  const length = message.readInt32LE(nameEnd + 1);
  return { name, value: message.toString('utf8', nameEnd + 5, nameEnd + 5 + length - 1) };
}

export async function startHoldingProxy(target: { host: string; port: number }): Promise<HoldingProxy> {
  let wanted: { command: string; collection: string; held: () => void } | null = null;
  const releases: Array<() => void> = [];
  const sockets = new Set<Socket>();

  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    let holding = false;
    const queued: Buffer[] = [];
    const forward = (message: Buffer) => (holding ? queued.push(message) : upstream.write(message));
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        const command = wanted && !holding ? commandOf(message) : null;
        if (wanted && command?.name === wanted.command && command.value === wanted.collection) {
          holding = true;
          queued.push(message);
          const { held } = wanted;
          wanted = null;
          releases.push(() => {
            holding = false;
            for (const m of queued.splice(0)) upstream.write(m);
          });
          held();
          continue;
        }
        forward(message);
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: (database) => `mongodb://127.0.0.1:${port}/${database}?directConnection=true`,
    holdNext: (command, collection) =>
      new Promise<void>((held) => {
        wanted = { command, collection, held };
      }),
    release: () => {
      for (const release of releases.splice(0)) release();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
