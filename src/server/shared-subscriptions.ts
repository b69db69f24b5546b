// Live fan-out without per-subscriber work: subscribers of `jobUtilization` that asked the same
// operation with the same variables under the same token scope get, for each live event, the
// result of ONE execution (every resolver ran once, for the first of them to handle the event).
// Each subscriber still has its own source stream (the hub channel, with its catch-up sample and
// its bounded queue), so joining, leaving, slow readers and errors behave as before.
import { createSourceEventStream, type DocumentNode, execute, type ExecutionArgs, type ExecutionResult, getOperationAST, print } from 'graphql';
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

/** Each document printed once (yoga's parse cache hands every subscriber of a query the same document). */
const printed = new WeakMap<DocumentNode, string>();
/**
 * One string per key, whoever asked: each subscription keeps its key for its whole life, and
 * thousands of subscribers of one question held a copy each. Bounded: cleared when full.
 */
const keys = new Map<string, string>();
const KEYS_KEPT = 10_000;

function shareableKey(args: ExecutionArgs, scope: string): string | null {
  const op = getOperationAST(args.document, args.operationName);
  if (op?.operation !== 'subscription') return null;
  const [field] = op.selectionSet.selections;
  if (op.selectionSet.selections.length !== 1 || field?.kind !== 'Field' || !SHAREABLE.has(field.name.value)) return null;
  let text = printed.get(args.document);
  if (text === undefined) printed.set(args.document, (text = print(args.document)));
  const key = JSON.stringify([scope, args.operationName ?? null, text, args.variableValues ?? null]);
  const known = keys.get(key);
  if (known !== undefined) return known;
  if (keys.size >= KEYS_KEPT) keys.clear();
  keys.set(key, key);
  return key;
}

/** The event's answer for `key`: one execution for every subscriber of the same key. */
function answer(args: ExecutionArgs, key: string, payload: unknown): Promise<ExecutionResult> {
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
}

const DONE: IteratorResult<ExecutionResult> = Object.freeze({ value: undefined, done: true });
const asNext = (value: ExecutionResult): IteratorResult<ExecutionResult> => ({ value, done: false });

/**
 * The subscriber's stream: its own source events, each answered by the execution shared with
 * every other subscriber of the same key. A class, not closures: what one subscription holds is
 * multiplied by its subscribers. The iterator protocol by hand, as graphql-js maps a source:
 * return() reaches the source at once (an async generator would wait for the next event before
 * it could stop the feed).
 */
class SharedStream implements AsyncIterableIterator<ExecutionResult> {
  constructor(
    private readonly events: AsyncIterator<unknown>,
    private readonly args: ExecutionArgs,
    private readonly key: string,
  ) {}

  [Symbol.asyncIterator]() {
    return this;
  }

  // A promise chain, not an async method: a subscriber spends its life waiting in next(), and a
  // suspended async method keeps its frame (a generator and its registers, ~250 bytes) meanwhile.
  next(): Promise<IteratorResult<ExecutionResult>> {
    return this.events.next().then((r) => (r.done ? DONE : answer(this.args, this.key, r.value).then(asNext)));
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    await this.events.return?.();
    return { value: undefined, done: true };
  }

  async throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.events.return?.();
    throw error;
  }
}

/**
 * `fallback` (the envelop's own subscribe) answers when the source cannot be made, so refusals
 * carry their codes exactly as before. Error masking and the other plugins' result hooks still
 * run per subscriber, on the shared result.
 */
async function sharedSubscribe(key: string, fallback: (args: ExecutionArgs) => unknown, args: ExecutionArgs): Promise<unknown> {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in Object(source))) return fallback(args);
  return new SharedStream((source as AsyncIterable<unknown>)[Symbol.asyncIterator](), args, key);
}

type WithStore = { contextValue: { store?: { endEvent?(): void } } };

/**
 * Each subscription's context lives as long as it does: once an event's result is out, its reads
 * are let go (with shared execution, most contexts never read again after their catch-up; they
 * held its rows for the subscription's life: ~300 KiB per subscriber). One set of hooks for
 * every subscription: they find the subscriber's store in the arguments envelop hands them.
 */
const endEventOnNext = { onNext: ({ args }: { args: unknown }) => (args as WithStore).contextValue.store?.endEvent?.() };
const endEvent = { onSubscribeResult: () => endEventOnNext };

/** The envelop plugin: every other plugin's subscribe hooks (limits, metrics, tracing, masking) still run. */
export function useSharedSubscriptions(): Plugin {
  return {
    onSubscribe({ args, subscribeFn, setSubscribeFn }) {
      const scope = (args.contextValue as { access?: { name?: string } | null }).access?.name ?? '';
      const key = shareableKey(args, scope);
      if (!key) return endEvent;
      // An arrow, not bind(): a bound function carries its own shape and "bound …" name (~150 bytes a subscriber).
      setSubscribeFn(((a: ExecutionArgs) => sharedSubscribe(key, subscribeFn as (args: ExecutionArgs) => unknown, a)) as never);
      return endEvent;
    },
  };
}
