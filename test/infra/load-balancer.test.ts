import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitForPort } from '../support/processes.js';
import { until } from '../creation/support.js';

// The scaled topology's load balancer (deploy/haproxy.cfg, the file `up.sh --scaled` and docker compose run) in
// front of two stand-in webs whose behaviour each test sets: what it retries and what it never does again,
// its health checks on /readyz, and X-Request-Id. The whole topology with the real service:
// scaled-topology.test.ts.

type Seen = { method: string; url: string; requestId: string | undefined; connection: number | undefined };
type StandIn = {
  name: string;
  port: number;
  seen: Seen[];
  /** 'answer': 200 with who answered; 'die': reads the request, then closes the connection without a word. */
  mode: 'answer' | 'die';
  ready: boolean;
  server: Server;
  sockets: Set<Socket>;
};

async function standIn(name: string): Promise<StandIn> {
  const port = await freePort();
  const web: StandIn = {
    name,
    port,
    seen: [],
    mode: 'answer',
    ready: true,
    sockets: new Set(),
    server: createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/readyz') {
          res.writeHead(web.ready ? 200 : 503).end();
          return;
        }
        const requestId = req.headers['x-request-id'] as string | undefined;
        web.seen.push({ method: req.method!, url: req.url!, requestId, connection: req.socket.remotePort });
        if (web.mode === 'die') {
          req.socket.destroy();
          return;
        }
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ by: name, requestId }));
      });
    }),
  };
  web.server.on('connection', (socket) => {
    web.sockets.add(socket);
    socket.on('close', () => web.sockets.delete(socket));
  });
  await new Promise<void>((r) => web.server.listen(port, '127.0.0.1', r));
  return web;
}

const config = resolve(import.meta.dirname, '../../deploy/haproxy.cfg');
let lb: ChildProcess;
let lbOutput = '';
let base: string;
let web1: StandIn;
let web2: StandIn;
let counter = 0;

beforeAll(async () => {
  if (spawnSync('haproxy', ['-v']).status !== 0)
    throw new Error('haproxy is not installed: run scripts/ensure-deps.sh (Debian package haproxy)');
  web1 = await standIn('web-1');
  web2 = await standIn('web-2');
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  lb = spawn('haproxy', ['-db', '-f', config], {
    env: {
      ...process.env,
      LB_BIND: `127.0.0.1:${port}`,
      LB_WEB_1: `127.0.0.1:${web1.port}`,
      LB_WEB_2: `127.0.0.1:${web2.port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  lb.stdout!.on('data', (chunk: Buffer) => (lbOutput += chunk.toString()));
  lb.stderr!.on('data', (chunk: Buffer) => (lbOutput += chunk.toString()));
  await waitForPort(port);
});

afterAll(async () => {
  if (lb && lb.exitCode === null) {
    const exited = new Promise((r) => lb.once('exit', r));
    lb.kill('SIGTERM');
    await exited;
  }
  for (const web of [web1, web2]) {
    if (!web) continue;
    for (const socket of web.sockets) socket.destroy();
    await new Promise((r) => web.server.close(r));
  }
});

/**
 * One request through the load balancer with a request id of its own, on a kept-alive connection as clients
 * do. `status` 0: the load balancer closed the connection without an answer (what it does, like any HTTP/1.1
 * server, when a request that was not the connection's first got no answer from the web: the client may send
 * it again itself if it knows that is safe).
 */
async function send(method: string, requestId: string | null = `lb-test-${++counter}`) {
  let res: Response;
  try {
    res = await fetch(`${base}/v1/anything/`, {
      method,
      headers: { 'content-type': 'application/json', ...(requestId ? { 'x-request-id': requestId } : {}) },
      body: method === 'POST' ? '{"a":1}' : undefined,
    });
  } catch (err) {
    if ((err as { cause?: { code?: string } }).cause?.code === 'UND_ERR_SOCKET')
      return { status: 0, requestId, by: '' };
    throw err;
  }
  const text = await res.text();
  // `by`: the stand-in that answered ('' when the load balancer answered itself, e.g. 502).
  const by = res.ok ? (JSON.parse(text) as { by: string }).by : '';
  return { status: res.status, requestId, by };
}
const seenBy = (web: StandIn, requestId: string | null) => web.seen.filter((s) => s.requestId === requestId);

describe('the load balancer (deploy/haproxy.cfg)', () => {
  it('takes a web whose /readyz fails out of rotation, and puts it back once it answers 200 again', async () => {
    const answeredBy = async (count: number) => {
      const by: string[] = [];
      for (let i = 0; i < count; i++) by.push((await send('GET')).by);
      return by;
    };
    web1.ready = false;
    // Out: four requests in a row answered by web-2 (round robin alternates while both are in).
    await until(
      async () => (await answeredBy(4)).every((by) => by === 'web-2'),
      'web-1 out of rotation after /readyz answered 503',
      60_000,
    );
    web1.ready = true;
    await until(async () => (await answeredBy(1))[0] === 'web-1', 'web-1 back in rotation', 60_000);
  });

  it('passes X-Request-Id through as it came, and adds none when there is none', async () => {
    const all = () => [...web1.seen, ...web2.seen];
    expect((await send('GET', 'caller-chosen-id:123')).status).toBe(200);
    expect(all().filter((s) => s.requestId === 'caller-chosen-id:123')).toHaveLength(1);
    const count = all().length;
    expect((await send('GET', null)).status).toBe(200);
    expect(all()).toHaveLength(count + 1);
    expect(all().filter((s) => s.requestId === undefined)).toHaveLength(1);
  });

  it('never sends a POST that reached a web again to another web; a GET it does', async () => {
    web1.mode = 'die';
    try {
      // Round robin: within a few requests one reaches web-1, which reads it and dies without answering.
      let post: Awaited<ReturnType<typeof send>> | undefined;
      for (let i = 0; i < 6 && !post; i++) {
        const res = await send('POST');
        if (seenBy(web1, res.requestId).length) post = res;
        else expect(res.status).toBe(200);
      }
      expect(post, 'no POST reached web-1').toBeDefined();
      // No answer for the client (a 502, or the connection closed), and nothing sent to web-2.
      expect([502, 0]).toContain(post!.status);
      expect(seenBy(web1, post!.requestId)).toHaveLength(1);
      expect(seenBy(web2, post!.requestId)).toHaveLength(0);

      let get: Awaited<ReturnType<typeof send>> | undefined;
      for (let i = 0; i < 6 && !get; i++) {
        const res = await send('GET');
        expect(res.status).toBe(200);
        if (seenBy(web1, res.requestId).length) get = res;
      }
      expect(get, 'no GET reached web-1').toBeDefined();
      expect(get!.by).toBe('web-2');
      expect(seenBy(web2, get!.requestId)).toHaveLength(1);
    } finally {
      web1.mode = 'answer';
    }
  });

  it('opens a connection to a web for every request, so none is written on a connection a dead web left', async () => {
    const before = web1.seen.length + web2.seen.length;
    for (let i = 0; i < 6; i++) expect((await send(i % 2 ? 'POST' : 'GET')).status).toBe(200);
    const connections = [...web1.seen, ...web2.seen].slice(before).map((s) => s.connection);
    expect(new Set(connections).size).toBe(6);
  });

  it('sends every request, POSTs included, to the other web while one refuses connections', async () => {
    for (const socket of web1.sockets) socket.destroy();
    await new Promise((r) => web1.server.close(r));
    const before = web1.seen.length;
    // At once, before the health checks notice: a refused connection means nothing was sent, so it is retried.
    for (let i = 0; i < 6; i++) {
      const res = await send('POST');
      expect(res.status, lbOutput).toBe(200);
      expect(res.by).toBe('web-2');
      expect(seenBy(web2, res.requestId)).toHaveLength(1);
    }
    expect(web1.seen.length).toBe(before);
  });
});
