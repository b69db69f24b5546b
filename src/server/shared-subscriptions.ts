// Live fan-out without per-subscriber work: subscribers of `jobUtilization` that asked the same
// operation with the same variables under the same token scope get, for each live event, the
// result of ONE execution (every resolver ran once, for the first of them to handle the event).
// Each subscriber still has its own source stream (the hub channel, with its catch-up sample and
// its bounded queue), so joining, leaving, slow readers and errors behave as before.
import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult, getOperationAST, print } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** What an event was answered with, per operation key: shared while the event object lives. */
const answers = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();

/** Every result a shared execution made, as it was handed to its subscribers. */
const sharedResults = new WeakSet<object>();

/**
 * Whether `result` is a shared execution's result itself: no plugin replaced it for this
 * subscriber (error masking and every other result hook replace, never edit, a result), so it
 * is the same for every subscriber of its event and may be serialised once for all (server/ws.ts).
 */
export function isSharedResult(result: unknown): result is ExecutionResult {
  return typeof result === 'object' && result !== null && sharedResults.has(result);
}

/** Root fields whose events may be shared: their answer depends on the event, the arguments and the scope only. */
const SHAREABLE = new Set(['jobUtilization']);

function shareableKey(args: ExecutionArgs, scope: string): string | null {
  const op = getOperationAST(args.document, args.operationName);
  if (op?.operation !== 'subscription') return null;
  const [field] = op.selectionSet.selections;
  if (op.selectionSet.selections.length !== 1 || field?.kind !== 'Field' || !SHAREABLE.has(field.name.value)) return null;
  return JSON.stringify([scope, args.operationName ?? null, print(args.document), args.variableValues ?? null]);
}

/**
 * The subscriber's stream: its own source events, each answered by the execution shared with
 * every other subscriber of the same key. `fallback` (the envelop's own subscribe) answers when
 * the source cannot be made, so refusals carry their codes exactly as before. Error masking and
 * the other plugins' result hooks still run per subscriber, on the shared result.
 */
async function sharedSubscribe(
  args: ExecutionArgs,
  key: string,
  fallback: (args: ExecutionArgs) => unknown,
): Promise<AsyncIterable<ExecutionResult> | unknown> {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in Object(source))) return fallback(args);
  const events = (source as AsyncIterable<unknown>)[Symbol.asyncIterator]();
  const answer = (payload: unknown): Promise<ExecutionResult> => {
    if (typeof payload !== 'object' || payload === null) return Promise.resolve(execute({ ...args, rootValue: payload }));
    let byKey = answers.get(payload);
    if (!byKey) answers.set(payload, (byKey = new Map()));
    let shared = byKey.get(key);
    if (!shared) {
      shared = Promise.resolve(execute({ ...args, rootValue: payload })).then((result) => {
        sharedResults.add(result);
        return result;
      });
      byKey.set(key, shared);
    }
    return shared;
  };
  // The iterator protocol by hand, as graphql-js maps a source: return() reaches the source at
  // once (an async generator would wait for the next event before it could stop the feed).
  const stream: AsyncIterableIterator<ExecutionResult> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const r = await events.next();
      return r.done ? { value: undefined, done: true } : { value: await answer(r.value), done: false };
    },
    async return() {
      await events.return?.();
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      await events.return?.();
      throw error;
    },
  };
  return stream;
}

/** The envelop plugin: every other plugin's subscribe hooks (limits, metrics, tracing, masking) still run. */
export function useSharedSubscriptions(): Plugin {
  return {
    onSubscribe({ args, subscribeFn, setSubscribeFn }) {
      // Each subscription's context lives as long as it does: once an event's result is out, its
      // reads are let go (with shared execution, most contexts never read again after their
      // catch-up; they held its rows for the subscription's life: ~300 KiB per subscriber).
      const store = (args.contextValue as { store?: { endEvent?(): void } }).store;
      const endEvent = { onSubscribeResult: () => ({ onNext: () => store?.endEvent?.() }) };
      const scope = (args.contextValue as { access?: { name?: string } | null }).access?.name ?? '';
      const key = shareableKey(args, scope);
      if (!key) return endEvent;
      setSubscribeFn((a) => sharedSubscribe(a as ExecutionArgs, key, () => subscribeFn(a)) as never);
      return endEvent;
    },
  };
}
