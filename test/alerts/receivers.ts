// Real HTTP receivers on loopback for the alert delivery tests: each records every request it gets
// (headers and JSON body) and answers as the test says (up, refusing with a status, or down: the
// port closed, so a send meets a refused connection, as with a receiver that is not running).
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

  async up(): Promise<this> {
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
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Closes the port: sends meet a refused connection until up() listens on it again. */
  async down(): Promise<void> {
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
