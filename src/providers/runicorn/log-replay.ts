// Viewer mode's logs: the viewer's only log route is a WebSocket that replays logs.txt from the
// first line and then tails it, with no offset and no end-of-replay marker. So one replay per run
// is kept and shared: every reader (pages, followers, concurrent queries) reads the lines received
// so far; a page is answered as soon as its lines have arrived, never by replaying again. The
// socket of a finished run is closed (close frame, code 1000) once the replay went quiet; a
// running run's socket stays open to tail while it is read and is closed the same way when nobody
// read it for a while or the adapter closes.
import WebSocket from 'ws';
import { UpstreamError } from '../../domain/errors.js';
import { errorCodeForStatus } from '../http-client.js';

/** Frames the viewer itself sends on the log socket (everything else is a line of logs.txt). */
const WS_RUN_NOT_FOUND = '[error] run not found';
const WS_NO_LOGS = /^\[info\] No logs available yet\./;
/** Sent when the replay reached the viewer's 10,000-line cap; the line read at that moment is dropped. */
const WS_REPLAY_CAPPED = /^\[info\] Showing last \d+ lines\./;
const WS_OTHER_INFO = /^\[info\] (Logs are now available, streaming\.\.\.|Connection timeout after 1 hour of inactivity)$/;

export interface LogReplayOptions {
  providerId: string;
  baseUrl: string;
  /** How long one read waits for its lines before failing with UPSTREAM_TIMEOUT. */
  timeoutMs: number;
  /**
   * A pause this long after the last frame (or after opening, for an empty file) is read as the end
   * of the replay: the viewer streams a local file, so gaps inside a replay are far shorter.
   */
  replayIdleMs?: number;
  /**
   * The same pause for a running run. Its log may grow every second, so a second of silence may
   * never come; but the viewer tails by polling logs.txt no more often than every 200 ms, while a
   * replay streams the file back to back. A pause shorter than the fastest poll therefore ends the
   * replay of a running run even when it writes many lines a second.
   */
  tailReplayIdleMs?: number;
  /** A followed (running) run's socket is closed after this long without a read. */
  followIdleMs?: number;
  /** Finished runs whose lines stay cached. */
  maxCachedRuns?: number;
}

export interface LogSlice {
  /** Every line received so far, in file order; null = a line the viewer dropped at its cap. */
  lines: readonly (string | null)[];
  /** True when the replay ended: no line beyond `lines` exists yet. */
  complete: boolean;
}

class Replay {
  lines: (string | null)[] = [];
  /** Frames of the current connection, counted as line numbers (the dropped line included). */
  private received = 0;
  socket: WebSocket | null = null;
  /** The current connection's replay went quiet (or the connection ended). */
  replayDone = false;
  notFound = false;
  error: UpstreamError | null = null;
  private replayTimer: NodeJS.Timeout | undefined;
  private lastFrameAt = 0;
  private followTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<() => void>();
  private closing: Promise<void> | null = null;
  lastUsed = Date.now();
  /** Connected at least once (a closed replay that never connected has nothing to serve). */
  connected = false;

  constructor(
    private readonly url: string,
    private readonly opts: Required<LogReplayOptions>,
    private follow: boolean,
  ) {}

  get open(): boolean {
    return this.socket !== null;
  }

  /** (Re)connects: the viewer replays from the first line; lines already held are checked, not added. */
  connect(follow: boolean): void {
    this.follow = follow;
    this.connected = true;
    this.received = 0;
    this.replayDone = false;
    this.error = null;
    this.notFound = false;
    // The replay outlives any one reader, so its handshake is not bound by a reader's short time-out.
    const socket = new WebSocket(this.url, { handshakeTimeout: Math.max(this.opts.timeoutMs, 10_000) });
    this.socket = socket;
    const id = this.opts.providerId;
    socket.on('open', () => this.armReplayTimer());
    socket.on('message', (data) => this.onFrame(data.toString()));
    socket.on('close', (code) => {
      if (this.socket === socket) this.socket = null;
      this.replayTimer = undefined;
      // Dropped without a close frame before the replay went quiet: what arrived is not the whole log.
      if (code === 1006 && !this.replayDone && !this.error) {
        this.error = new UpstreamError('UPSTREAM_UNAVAILABLE', id, `log socket dropped mid-replay after ${this.received} lines`);
      }
      clearTimeout(this.replayTimer);
      clearTimeout(this.followTimer);
      this.replayDone = true;
      this.wake();
    });
    socket.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      const retryAfter = Number(res.headers['retry-after']);
      this.error =
        status === 429
          ? new UpstreamError('UPSTREAM_RATE_LIMITED', id, 'log socket: HTTP 429', {
              status,
              retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : null,
            })
          : new UpstreamError(errorCodeForStatus(status), id, `log socket: HTTP ${status}`, { status });
      res.resume();
      socket.terminate();
    });
    socket.on('error', (err) => {
      const timedOut = /handshake has timed out/i.test(err.message);
      this.error ??= new UpstreamError(timedOut ? 'UPSTREAM_TIMEOUT' : 'UPSTREAM_UNAVAILABLE', id, `log socket: ${err.message}`);
      this.wake();
    });
  }

  private onFrame(text: string): void {
    if (text === WS_RUN_NOT_FOUND) {
      this.notFound = true;
      this.endReplay();
      return;
    }
    if (WS_NO_LOGS.test(text)) {
      // No logs.txt yet: nothing to replay (the viewer drops the socket ~2 s later anyway).
      this.endReplay();
      return;
    }
    if (WS_OTHER_INFO.test(text)) return;
    const line = WS_REPLAY_CAPPED.test(text) ? null : text;
    const i = this.received++;
    if (i < this.lines.length) {
      // A reconnect replays lines already held; a differing one means logs.txt was replaced.
      if (line !== null && this.lines[i] !== null && this.lines[i] !== line) this.lines = [...this.lines.slice(0, i), line];
      else if (line !== null && this.lines[i] === null) this.lines[i] = line;
    } else this.lines.push(line);
    if (this.replayDone) this.wake();
    else this.armReplayTimer();
  }

  /**
   * One timer per quiet period, not one per frame: when it fires it looks at when the last frame
   * came and waits out the rest. A busy event loop looks like silence to a timer, so before the
   * replay is called done, pending socket input is let in first (setImmediate runs after the I/O
   * poll) and the replay goes on if frames came.
   */
  private armReplayTimer(): void {
    const idleMs = this.follow ? this.opts.tailReplayIdleMs : this.opts.replayIdleMs;
    this.lastFrameAt = Date.now();
    this.wake();
    if (this.replayTimer) return;
    const fire = () => {
      const seen = this.received;
      setImmediate(() => {
        if (this.replayDone) return;
        const quietFor = Date.now() - this.lastFrameAt;
        if (this.received === seen && quietFor >= idleMs) {
          this.replayTimer = undefined;
          this.endReplay();
        } else this.replayTimer = setTimeout(fire, Math.max(1, idleMs - quietFor));
      });
    };
    this.replayTimer = setTimeout(fire, idleMs);
  }

  /** The replay went quiet: a finished run's socket is closed, a running run's keeps tailing. */
  private endReplay(): void {
    clearTimeout(this.replayTimer);
    this.replayTimer = undefined;
    this.replayDone = true;
    if (!this.follow || this.notFound) void this.close();
    else this.touch();
    this.wake();
  }

  /** A read happened: a followed socket stays open for another followIdleMs. */
  touch(): void {
    this.lastUsed = Date.now();
    if (!this.follow || !this.socket || !this.replayDone) return;
    clearTimeout(this.followTimer);
    this.followTimer = setTimeout(() => void this.close(), this.opts.followIdleMs);
    this.followTimer.unref?.();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves when `ready()` holds, the replay ended, an error came, or `ms` passed (false). */
  wait(ready: () => boolean, ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (ready() || this.replayDone || this.error) finish(true);
      };
      const timer = setTimeout(() => finish(false), ms);
      const onAbort = () => {
        cleanup();
        reject(signal.reason ?? new Error('aborted'));
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
        signal.removeEventListener('abort', onAbort);
      };
      const finish = (ok: boolean) => {
        cleanup();
        resolve(ok);
      };
      this.waiters.add(check);
      signal.addEventListener('abort', onAbort);
      check();
    });
  }

  /** Closes the socket with a close frame (1000) and resolves once the viewer acknowledged it. */
  close(): Promise<void> {
    const socket = this.socket;
    clearTimeout(this.followTimer);
    clearTimeout(this.replayTimer);
    this.replayTimer = undefined;
    if (!socket) return this.closing ?? Promise.resolve();
    this.closing = new Promise<void>((resolve) => {
      if (socket.readyState === WebSocket.CLOSED) return resolve();
      socket.once('close', () => resolve());
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close(1000, 'done');
    });
    return this.closing;
  }
}

export class LogReplays {
  private readonly replays = new Map<string, Replay>();
  private readonly opts: Required<LogReplayOptions>;

  constructor(opts: LogReplayOptions) {
    this.opts = { replayIdleMs: 1000, tailReplayIdleMs: 150, followIdleMs: 30_000, maxCachedRuns: 8, ...opts };
  }

  /** Whether a read of this finished run would be answered from the lines held, without the viewer. */
  heldWhole(runId: string): boolean {
    const r = this.replays.get(runId);
    return Boolean(r && !r.open && r.connected && r.replayDone && !r.error && !r.notFound);
  }

  /** Drops what is held of a run (it was deleted). */
  forget(runId: string): void {
    const r = this.replays.get(runId);
    if (r && !r.open) this.replays.delete(runId);
  }

  /** Sockets open right now (tests and /metrics read it). */
  openSockets(): number {
    let n = 0;
    for (const r of this.replays.values()) if (r.open) n++;
    return n;
  }

  /**
   * The run's lines up to at least `need` of them (or all there are). `follow` = the run is still
   * running, so its log may grow: a finished replay is reconnected to tail it. null = no such run.
   */
  async read(runId: string, need: number, follow: boolean, signal: AbortSignal): Promise<LogSlice | null> {
    const base = this.opts.baseUrl.replace(/\/+$/, '').replace(/^http/, 'ws');
    let replay = this.replays.get(runId);
    if (!replay) {
      replay = new Replay(`${base}/api/runs/${encodeURIComponent(runId)}/logs/ws`, this.opts, follow);
      this.replays.set(runId, replay);
      this.evict();
    }
    const r = replay;
    // A finished run's complete replay is served from memory; anything else (first read, a failed
    // or unknown-run answer, a running run whose tail was closed) connects again.
    if (!r.open && (!r.connected || r.error || r.notFound || follow)) r.connect(follow);
    r.touch();
    const arrived = await r.wait(() => r.lines.length >= need, this.opts.timeoutMs, signal);
    r.touch();
    if (r.error) throw r.error;
    if (r.notFound) return null;
    if (!arrived) {
      if (r.lines.length >= need) return { lines: r.lines, complete: false };
      throw new UpstreamError(
        'UPSTREAM_TIMEOUT',
        this.opts.providerId,
        `the viewer is still replaying logs.txt (${r.lines.length} lines so far, ${need} needed); the replay goes on, ask again`,
        { retryAfterSeconds: 1 },
      );
    }
    // The run finished since its tail was opened: nothing more will come once the replay is done.
    if (!follow && r.open && r.replayDone) void r.close();
    return { lines: r.lines, complete: r.replayDone && r.lines.length < need };
  }

  private evict(): void {
    if (this.replays.size <= this.opts.maxCachedRuns) return;
    const idle = [...this.replays].filter(([, r]) => !r.open).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [id] of idle.slice(0, this.replays.size - this.opts.maxCachedRuns)) this.replays.delete(id);
  }

  /** Closes every socket with a close frame and waits for the viewer to acknowledge each. */
  async close(): Promise<void> {
    await Promise.all([...this.replays.values()].map((r) => r.close()));
  }
}
