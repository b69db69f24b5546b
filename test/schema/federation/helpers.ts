// The federation tests' own servers (a second subgraph, the gateway) on loopback, and a plain POST
// to any of them.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { GqlResult } from '../../support/runtime.js';

/** Starts `server` on a free loopback port; `url` is its /graphql endpoint. */
export async function listen(server: http.Server): Promise<{ server: http.Server; url: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

/** Closes a server started by listen() (its keep-alive connections too); nothing when it never started. */
export function close(server: http.Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** One GraphQL operation to `url`, which must answer 200 (errors, if any, in the body). */
export async function post<T = any>(url: string, query: string, variables?: Record<string, unknown>): Promise<GqlResult<T>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  expect(res.status).toBe(200);
  return (await res.json()) as GqlResult<T>;
}
