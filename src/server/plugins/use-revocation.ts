// A subscription lives as long as its client wants; its token may not. When the token file
// changes and a subscription's token is no longer valid, the subscription gets one
// UNAUTHENTICATED error and ends (SSE and graphql-ws alike; the socket's other operations with
// valid tokens are untouched).
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { TokenStore } from '../../config/security.js';
import { presentedToken } from '../access.js';
import { isAsyncIterable } from './operation.js';

function revokedError(): GraphQLError {
  return new GraphQLError('the API token of this subscription was revoked', { extensions: { code: 'UNAUTHENTICATED' } });
}

/** `source`, ending with one error once `revoked` settles. Unsubscribing passes straight through. */
function endOnRevocation<T>(source: AsyncIterable<T>, revoked: Promise<void>, release: () => void): AsyncIterableIterator<T> {
  const it = source[Symbol.asyncIterator]();
  const signal = revoked.then(() => 'revoked' as const);
  let done = false;
  const finish = async () => {
    done = true;
    release();
    await it.return?.();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (done) return { done: true, value: undefined };
      const r = await Promise.race([it.next(), signal]);
      if (r === 'revoked') {
        await finish();
        return { done: false, value: { errors: [revokedError()] } as T };
      }
      if (r.done) {
        done = true;
        release();
      }
      return r;
    },
    async return() {
      await finish();
      return { done: true, value: undefined };
    },
    async throw(err) {
      await finish();
      throw err;
    },
  };
}

export function useRevocation(tokens: TokenStore | null): Plugin {
  return {
    onSubscribe({ args }) {
      if (!tokens?.configured) return;
      const c = args.contextValue as { request?: Request; connectionParams?: Record<string, unknown> };
      const token = presentedToken(c.request?.headers ?? null, c.connectionParams);
      if (!token) return;
      return {
        onSubscribeResult({ result, setResult }) {
          if (!isAsyncIterable(result)) return;
          let release = () => {};
          const revoked = new Promise<void>((resolve) => {
            release = tokens.onChange(() => {
              if (tokens.lookup(token) === null) resolve();
            });
          });
          setResult(endOnRevocation(result, revoked, () => release()) as never);
        },
      };
    },
  };
}
