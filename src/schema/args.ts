// Argument checking shared by every series and connection field: bad input becomes a coded
// error before any work is done.
import { DomainError } from '../domain/errors.js';
import type { Aggregation } from '../domain/types.js';
import type { JobCursor } from '../store/index.js';
import { DEFAULT_LIMITS, type Limits } from './context.js';

export interface SeriesArgs {
  from?: Date | null;
  to?: Date | null;
  maxPoints?: number | null;
  aggregation?: Aggregation | null;
}

export interface CheckedSeriesArgs {
  from: Date | null;
  to: Date | null;
  maxPoints: number;
  aggregation: Aggregation;
}

export function checkSeriesArgs(args: SeriesArgs, limits: Limits): CheckedSeriesArgs {
  const from = args.from ?? null;
  const to = args.to ?? null;
  if (from && to && from > to) {
    throw new DomainError('BAD_INPUT', `"from" (${from.toISOString()}) is after "to" (${to.toISOString()})`, { argument: 'from' });
  }
  const maxRangeDays = limits.maxRangeDays ?? DEFAULT_LIMITS.maxRangeDays!;
  if (from && to && to.getTime() - from.getTime() > maxRangeDays * 86_400_000) {
    throw new DomainError('BAD_INPUT', `[from, to] may span at most ${maxRangeDays} days`, { argument: 'to' });
  }
  const maxPoints = args.maxPoints ?? limits.defaultMaxPoints;
  if (!Number.isInteger(maxPoints) || maxPoints < 1 || maxPoints > limits.maxPointsCap) {
    throw new DomainError('BAD_INPUT', `"maxPoints" must be between 1 and ${limits.maxPointsCap}, got ${maxPoints}`, {
      argument: 'maxPoints',
    });
  }
  return { from, to, maxPoints, aggregation: args.aggregation ?? 'AVG' };
}

export function checkPageSize(first: number | null | undefined, def: number, cap: number, argument = 'first'): number {
  const n = first ?? def;
  if (!Number.isInteger(n) || n < 0 || n > cap) {
    throw new DomainError('BAD_INPUT', `"${argument}" must be between 0 and ${cap}, got ${n}`, { argument });
  }
  return n;
}

export function encodeJobCursor(c: JobCursor): string {
  return Buffer.from(JSON.stringify([c.sortAt.getTime(), c.id]), 'utf8').toString('base64url');
}

/** 9999-12-31T23:59:59.999Z: past the last instant any DateTime of this API can name. */
const LATEST_CURSOR_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function decodeJobCursor(cursor: string | null | undefined, argument: 'after' | 'before' = 'after'): JobCursor | null {
  if (cursor === null || cursor === undefined) return null;
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    // A cursor carries an instant the store can hold and an id without control characters; anything else was not issued here.
    // eslint-disable-next-line no-control-regex
    if (
      typeof ms === 'number' &&
      Number.isInteger(ms) &&
      ms >= 0 &&
      ms <= LATEST_CURSOR_MS &&
      typeof id === 'string' &&
      id.length > 0 &&
      id.length <= 1024 &&
      !/[\u0000-\u001f]/.test(id)
    ) {
      return { sortAt: new Date(ms), id };
    }
  } catch {
    // fall through to the coded error
  }
  throw new DomainError('BAD_INPUT', `"${argument}" is not a cursor this API issued`, { argument });
}
