// Real HTTP receivers on loopback for the alert delivery tests: each records every request it gets
// (headers and JSON body) and answers as the test says (up, refusing with a status, or down: every
// connection cut as it opens, as with a receiver that is not running). Down keeps the port: a
// closed port could be taken meanwhile by another process on this shared machine, whose answers
// would then count as the receiver's.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  key: string | null;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** What the next requests are answered (default 200). */
  answer: (req: ReceivedRequest) => Answer = () => ({ status: 200, body: 'ok' });
  private server: http.Server | null = null;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  private refusing = false;

  async up(): Promise<this> {
    this.refusing = false;
    if (this.server) return this;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: ReceivedRequest = {
          key: (req.headers['idempotency-key'] as string) ?? null,
          headers: req.headers,
          body: JSON.parse(Buffer.concat(chunks).toString()),
        };
        this.requests.push(r);
        const a = this.answer(r);
        res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers }).end(a.body ?? '');
      });
    });
    server.on('connection', (socket) => {
      if (this.refusing) socket.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Cuts every connection, open or new, until up(): a send fails as with a receiver that is not running. */
  async down(): Promise<void> {
    this.refusing = true;
    this.server?.closeAllConnections();
  }

  /** Frees the port (after the test). */
  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Requests per idempotency key. */
  counts(): Map<string, number> {
    const m = new Map<string, number>();
    for (const r of this.requests) m.set(r.key ?? '', (m.get(r.key ?? '') ?? 0) + 1);
    return m;
  }
}
