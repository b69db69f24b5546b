// What an answer weighs in bytes, bounded without serialising it where that suffices, and
// serialised once where it does not (the limit on the answer's size, MAX_RESPONSE_BYTES).
import type { ExecutionResult } from 'graphql';

/** Answers bounded by a walk up to this many bytes (see answerBytes). */
const SMALL_ANSWER_BYTES = 16 * 1024;

/**
 * The answer's UTF-8 bytes as far as the limit needs them (0 when surely under it). An answer
 * without errors is serialised here, once: yoga's HTTP answer calls a result's own `stringify`,
 * which hands back this text (a dashboard's 54 MB answer was walked to bound its size, then
 * serialised again: 0.2 s of a cold answer's last 1.5 s). An answer with errors is bounded by a
 * walk, as yoga serialises a copy of it without the errors' internal fields. So is a small one
 * (bound at most SMALL_ANSWER_BYTES): a walk that stops at that bound costs less than a
 * serialisation and its hand-over, and yoga still serialises it once (graphql-jit's `stringify`
 * is JSON.stringify: use-query-jit.ts compiles without its custom serialiser, so a plugin's
 * changed copy that carries it is serialised whole).
 */
export function answerBytes(result: ExecutionResult, limit: number): number {
  const withInternals = result.errors?.length || (result.extensions as { http?: unknown } | undefined)?.http;
  if (withInternals || !Object.isExtensible(result)) {
    if (jsonBytesAtMost(result, limit) <= limit) return 0;
    return Buffer.byteLength(JSON.stringify(result));
  }
  if (SMALL_ANSWER_BYTES <= limit && jsonBytesAtMost(result, SMALL_ANSWER_BYTES) <= SMALL_ANSWER_BYTES) return 0;
  const text = JSON.stringify(result);
  // A UTF-16 unit is one to three UTF-8 bytes: the exact count only where the bounds straddle the limit.
  const bytes = text.length * 3 <= limit ? 0 : Buffer.byteLength(text);
  if (bytes > limit) return bytes;
  const { data, errors, extensions } = result;
  // Assigned as graphql-jit assigns its own, so a plugin's `{ ...result }` copy carries it too; any
  // result that is not this one's data, errors and extensions alone is serialised anew.
  (result as { stringify?: (value: ExecutionResult) => string }).stringify = (value) =>
    value.data === data && value.errors === errors && value.extensions === extensions && onlyAnswerKeys(value) ? text : JSON.stringify(value);
  return bytes;
}

const ANSWER_KEYS: ReadonlySet<string> = new Set(['data', 'errors', 'extensions', 'stringify']);

function onlyAnswerKeys(value: object): boolean {
  for (const key of Object.keys(value)) if (!ANSWER_KEYS.has(key)) return false;
  return true;
}

/** Bytes a JSON number takes at most ("-1.2345678901234567e-308"). */
const MAX_NUMBER_BYTES = 24;
const MAX_WALK_DEPTH = 1000;

/**
 * An upper bound of the UTF-8 bytes of JSON.stringify(value), without building the string: a
 * UTF-16 unit of a string takes at most 6 bytes (a \u escape), a number at most 24. Stops and
 * answers Infinity once the bound passes `limit`; the caller then measures exactly.
 */
export function jsonBytesAtMost(value: unknown, limit: number, depth = 0): number {
  if (typeof value === 'string') return 2 + 6 * value.length;
  if (typeof value === 'number') return MAX_NUMBER_BYTES;
  if (typeof value === 'boolean') return 5;
  if (value === null || typeof value !== 'object') return 4;
  // Deeper than any answer nests (or a cycle, which JSON.stringify refuses): measured exactly.
  if (depth > MAX_WALK_DEPTH) return Number.POSITIVE_INFINITY;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return jsonBytesAtMost(toJSON.call(value), limit, depth + 1);
  let bytes = 2;
  if (Array.isArray(value)) {
    bytes += value.length;
    for (let i = 0; i < value.length; i++) {
      bytes += jsonBytesAtMost(value[i], limit, depth + 1);
      if (bytes > limit) return Number.POSITIVE_INFINITY;
    }
    return bytes;
  }
  // JSON.stringify's keys: own and enumerable (an executor's result objects have no prototype).
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    bytes += 4 + 6 * key.length + jsonBytesAtMost((value as Record<string, unknown>)[key], limit, depth + 1);
    if (bytes > limit) return Number.POSITIVE_INFINITY;
  }
  return bytes;
}
