// The last line for secrets: every byte the server sends (HTTP bodies, SSE events, graphql-ws
// messages) is checked against every spelling of every registered credential before it leaves.
// Upstream text is already scrubbed where UpstreamError is made (domain/secrets.ts); a finding
// here means some other path quoted a secret, so it is masked, logged (without the secret) and
// counted, never sent. Masking keeps the byte length (Content-Length and JSON stay valid).
import type http from 'node:http';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import { registeredForms } from '../domain/secrets.js';

const MASK = 0x2a; // '*'

export type Transport = 'http' | 'graphql-ws';

export class OutgoingGuard {
  private forms: string[] = [];
  private needles: Buffer[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly onFinding: (transport: Transport) => void,
  ) {}

  private currentNeedles(): Buffer[] {
    const forms = registeredForms();
    if (forms !== this.forms) {
      this.forms = forms;
      this.needles = forms.map((f) => Buffer.from(f, 'utf8'));
    }
    return this.needles;
  }

  /** The chunk with every secret spelling masked, and whether anything was found. */
  mask(chunk: Buffer): { out: Buffer; found: boolean } {
    let out = chunk;
    let found = false;
    for (const needle of this.currentNeedles()) {
      let at = out.indexOf(needle);
      while (at !== -1) {
        if (!found) {
          out = Buffer.from(out); // never write into a buffer the caller may still own
          found = true;
        }
        out.fill(MASK, at, at + needle.length);
        at = out.indexOf(needle, at + needle.length);
      }
    }
    return { out, found };
  }

  private check(chunk: unknown, encoding: BufferEncoding | undefined, transport: Transport): unknown {
    if (chunk === undefined || chunk === null) return chunk;
    // UTF-8 text is searched as it is: a spelling's bytes occur in the encoded text exactly where
    // the spelling occurs in the string, so only text that quotes one is encoded and masked.
    if (typeof chunk === 'string' && (encoding === undefined || encoding === 'utf8' || encoding === 'utf-8')) {
      const forms = registeredForms();
      let quoted = false;
      for (const form of forms) {
        if (form.length > 0 && chunk.includes(form)) {
          quoted = true;
          break;
        }
      }
      if (!quoted) return chunk;
    }
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, encoding ?? 'utf8')
        : Buffer.isBuffer(chunk)
          ? chunk
          : chunk instanceof Uint8Array
            ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
            : null;
    if (!bytes) return chunk;
    const { out, found } = this.mask(bytes);
    if (!found) return chunk;
    this.onFinding(transport);
    this.logger.error({ transport }, 'an outgoing payload quoted a provider secret: masked before sending (a path that skips UpstreamError sanitising)');
    return out;
  }

  /**
   * A response class (for http.createServer's ServerResponse option) whose every body chunk
   * (plain, chunked or an SSE stream) passes the check. The check sits on the class, not on each
   * response: nothing is added to a response after it is made, so every response keeps the one
   * shape V8 optimises Node's response code for (it used to get two functions and three fields).
   */
  responseClass<T extends new (req: http.IncomingMessage) => http.ServerResponse>(Base: T): T {
    const guard = this;
    const write = Base.prototype.write as (this: http.ServerResponse, ...args: unknown[]) => boolean;
    const end = Base.prototype.end as (this: http.ServerResponse, ...args: unknown[]) => http.ServerResponse;
    // write(chunk, encoding?, callback?) and end(chunk?, encoding?, callback?): a masked chunk is
    // a Buffer, sent without the string's encoding.
    class GuardedResponse extends (Base as unknown as typeof http.ServerResponse) {
      override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
        const out = guard.checkHttp(chunk, encoding);
        if (out !== chunk && typeof encoding === 'string') return write.call(this, out, callback);
        return write.call(this, out, encoding, callback);
      }
      override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
        if (typeof chunk === 'function') return end.call(this, chunk) as this;
        const out = guard.checkHttp(chunk, encoding);
        if (out !== chunk && typeof encoding === 'string') return end.call(this, out, callback) as this;
        return end.call(this, out, encoding, callback) as this;
      }
    }
    return GuardedResponse as unknown as T;
  }

  /** @internal The chunk as it may leave (checked over HTTP). */
  checkHttp(chunk: unknown, encoding: unknown): unknown {
    return this.check(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : undefined, 'http');
  }

  /**
   * A payload serialised once and sent on many sockets (server/ws.ts) is checked once, here,
   * instead of in every message that carries it.
   */
  prepared(text: string): string {
    const checked = this.check(text, 'utf8', 'graphql-ws');
    return typeof checked === 'string' ? checked : (checked as Buffer).toString('utf8');
  }

  /** Every message this graphql-ws socket sends passes the check. */
  socket(ws: WebSocket): void {
    const send = ws.send.bind(ws) as (...args: unknown[]) => void;
    ws.send = ((...args: unknown[]) => {
      const checked = this.check(args[0], 'utf8', 'graphql-ws');
      // Masked text stays a text frame (graphql-ws clients reject binary ones).
      args[0] = Buffer.isBuffer(checked) && typeof args[0] === 'string' ? checked.toString('utf8') : checked;
      return send(...args);
    }) as typeof ws.send;
  }
}
