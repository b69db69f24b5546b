// Black-box simulator tests read answers the way a platform's clients meet them: any status, a
// JSON body or not (an HTML 429 page, a truncated body), and the headers.
import { once } from 'node:events';
import type { SimulatorHandle } from '../../src/simulators/kit.js';

export interface SimAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body; `{ unparsed: text }` when it is not JSON; undefined when empty. */
  body: any;
}

export async function simAnswer(res: Response): Promise<SimAnswer> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = { unparsed: text };
  }
  return { status: res.status, headers: res.headers, body };
}

/**
 * A 'timeout' fault holds the request for ever: `send(signal)` makes it, the client gives up once it
 * has arrived, and the simulator must count it abandoned. Resolves with what the client saw.
 */
export async function heldUntilAbandoned(sim: SimulatorHandle, route: string, send: (signal: AbortSignal) => Promise<unknown>): Promise<unknown> {
  sim.inject({ kind: 'timeout', route, times: 1 });
  const abort = new AbortController();
  const arrived = once(sim.events, 'request');
  const answer = send(abort.signal).catch((e: Error) => e);
  await arrived;
  const abandoned = once(sim.events, 'abandoned');
  abort.abort();
  const seen = await answer;
  const [abandonedRoute] = await abandoned;
  if (abandonedRoute !== route) throw new Error(`abandoned ${String(abandonedRoute)}, expected ${route}`);
  return seen;
}
