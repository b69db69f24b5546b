// Argument checking shared by every series and connection field: bad input becomes a coded
// error before any work is done.
import { DomainError } from '../domain/errors.js';
import type { Aggregation } from '../domain/types.js';
import { DEFAULT_JOB_ORDER, type JobCursor, type JobOrder } from '../store/index.js';
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

/** Which ordering a cursor belongs to: a cursor of one ordering means nothing in another. */
function orderTag(order: JobOrder): string {
  const s = order.summary;
  return [order.by, order.direction, ...(s ? [s.value, s.metric] : [])].join(':');
}

const isDefaultOrder = (order: JobOrder) => order.by === DEFAULT_JOB_ORDER.by && order.direction === DEFAULT_JOB_ORDER.direction;

/**
 * The default order's cursor is `[epoch ms, id]` (as before orderings existed, so cursors issued
 * then still work); another order's is `[key, id, order tag, now ms]`: the key of the row in that
 * order and, for durations, the instant the first page measured them to, so later pages agree.
 */
export function encodeJobCursor(order: JobOrder, c: JobCursor): string {
  const body = isDefaultOrder(order) ? [c.key, c.id] : [c.key, c.id, orderTag(order), order.now?.getTime() ?? null];
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/** 9999-12-31T23:59:59.999Z: past the last instant any DateTime of this API can name. */
const LATEST_CURSOR_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export interface DecodedJobCursor {
  cursor: JobCursor;
  /** The instant a DURATION order measured to on the page that issued it. */
  now: Date | null;
}

export function decodeJobCursor(cursor: string | null | undefined, order: JobOrder, argument: 'after' | 'before' = 'after'): DecodedJobCursor | null {
  if (cursor === null || cursor === undefined) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  if (Array.isArray(parsed)) {
    const [key, id, tag, nowMs] = parsed as unknown[];
    // A cursor carries an id without control characters and a key of its order's kind; anything else was not issued here.
    const saneId = typeof id === 'string' && id.length > 0 && id.length <= 1024 && !/[\u0000-\u001f]/.test(id);
    const isMs = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= LATEST_CURSOR_MS;
    const keyOk =
      order.by === 'CREATED'
        ? isMs(key)
        : order.by === 'NAME'
          ? typeof key === 'string' && key.length <= 10_000
          : key === null || (typeof key === 'number' && Number.isFinite(key));
    const issuedBy = parsed.length === 2 ? orderTag(DEFAULT_JOB_ORDER) : typeof tag === 'string' ? tag : null;
    const tagOk = issuedBy === orderTag(order) && (parsed.length === 2 || nowMs === null || isMs(nowMs));
    if (saneId && keyOk && tagOk) {
      return { cursor: { key: key as number | string | null, id: id as string }, now: typeof nowMs === 'number' ? new Date(nowMs) : null };
    }
    if (saneId && issuedBy !== null && issuedBy !== orderTag(order)) {
      throw new DomainError('BAD_INPUT', `"${argument}" is a cursor of another ordering: page with the orderBy that issued it`, { argument });
    }
  }
  throw new DomainError('BAD_INPUT', `"${argument}" is not a cursor this API issued`, { argument });
}
