// A subscription lives as long as its client wants; its token may not. When the token file
// changes and a subscription's token is no longer valid, the subscription gets one
// UNAUTHENTICATED error and ends (SSE and graphql-ws alike; the socket's other operations with
// valid tokens are untouched).
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { TokenStore } from '../../config/index.js';
import { presentedToken } from '../access.js';
import { isAsyncIterable } from './operation.js';

function revokedError(): GraphQLError {
  return new GraphQLError('the API token of this subscription was revoked', { extensions: { code: 'UNAUTHENTICATED' } });
}

/**
 * `source`, ending with one error once `revoked` settles. Unsubscribing passes straight through.
 * The revocation answers a waiting read through one listener, not a race per read: a race added
 * a reaction to the never-settled `revoked` for every event, and each reaction kept its event
 * (with its result) reachable for the subscription's life.
 */
export function endOnRevocation<T>(source: AsyncIterable<T>, revoked: Promise<void>, release: () => void): AsyncIterableIterator<T> {
  const it = source[Symbol.asyncIterator]();
  let done = false;
  let isRevoked = false;
  // The read waiting for the source, if any.
  let waiting: ((r: IteratorResult<T>) => void) | null = null;
  const revokedResult = (): IteratorResult<T> => ({ done: false, value: { errors: [revokedError()] } as T });
  const finish = async () => {
    if (done) return;
    done = true;
    release();
    await it.return?.();
  };
  void revoked.then(() => {
    isRevoked = true;
    const answer = waiting;
    if (!answer) return;
    waiting = null;
    void finish();
    answer(revokedResult());
  });
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (done) return { done: true, value: undefined };
      if (isRevoked) {
        await finish();
        return revokedResult();
      }
      return new Promise<IteratorResult<T>>((resolve, reject) => {
        waiting = resolve;
        it.next().then(
          (r) => {
            // Answered already by the revocation: the source's own answer is dropped.
            if (waiting !== resolve) return;
            waiting = null;
            if (r.done && !done) {
              done = true;
              release();
            }
            resolve(r);
          },
          (err) => {
            if (waiting !== resolve) return;
            waiting = null;
            reject(err);
          },
        );
      });
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
