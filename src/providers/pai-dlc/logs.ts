// PAI-DLC adapter: pod logs, paged by time windows per pod incarnation.
import { DomainError, UpstreamError } from '../../domain/errors.js';
import { TERMINAL_STATUSES, type JobRef, type LogLineRecord, type LogPage, type LogRequest } from '../../domain/types.js';
import { reportShapeMismatch } from '../shape-watch.js';
import { mapStatus } from './mapping.js';
import { percentEncode } from './signer.js';
import { podLogsResponse } from './wire.js';
import { isoSeconds, LOG_MAX_LINES, type PaiDlcContext } from './context.js';
import { incarnationsOf, visibleJob } from './jobs.js';

/**
 * Logs are plain lines without timestamps, at most MaxLines (default 2000) per call, from
 * StartTime on. We page by time: each incarnation (PodUid) of each pod is read in windows
 * [start, end] at second resolution; a window that comes back full is halved until it is not,
 * then read whole, and the next window starts one second after it. Both ends inclusive and
 * oldest-first order are our reading (unconfirmed). The cursor is
 * "<incarnation>:<window start s>:<window end s>:<lines of that window already returned>".
 */
export async function fetchLogs(dlc: PaiDlcContext, ref: JobRef, request: LogRequest, signal: AbortSignal): Promise<LogPage> {
  const { providerId, call } = dlc;
  const job = await visibleJob(dlc, ref.externalId, signal);
  if (!job) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `PAI-DLC job ${ref.externalId} does not exist`);
  const incarnations = incarnationsOf(job);
  const cursor = decodeLogCursor(request.after);
  // The cursor names its incarnation by PodUid: a restart adds incarnations before later pods.
  let index = cursor ? incarnations.findIndex((i) => i.key === cursor.key) : 0;
  if (cursor && index < 0) {
    if (cursor.key !== END_KEY) throw new DomainError('BAD_INPUT', 'the log cursor names a pod incarnation this job does not have');
    index = incarnations.length;
  }
  let windowStart = cursor?.start ?? null;
  let windowEnd = cursor?.end ?? null;
  let skip = cursor?.skip ?? 0;
  const nowSec = Math.floor(Date.now() / 1000);
  const sinceSec = request.since ? Math.floor(request.since.getTime() / 1000) : null;
  const lines: LogLineRecord[] = [];
  while (index < incarnations.length && lines.length < request.limit) {
    const { pod, podId } = incarnations[index]!;
    const startedSec = secondsOf(pod.GmtStartTime) ?? secondsOf(pod.GmtCreateTime);
    // A running pod is read up to the last whole second, so no later line lands in a read second.
    const lastSec = secondsOf(pod.GmtFinishTime) ?? nowSec - 1;
    let start = windowStart ?? Math.max(startedSec ?? lastSec + 1, sinceSec ?? -Infinity);
    if (startedSec === null || start > lastSec) {
      if (pod.GmtFinishTime || startedSec === null) {
        index += 1;
        windowStart = windowEnd = null;
        skip = 0;
        continue;
      }
      break; // a running pod with nothing new yet
    }
    let end = windowEnd ?? lastSec;
    let got: string[] = [];
    for (;;) {
      const res = await call(
        {
          action: 'GetPodLogs',
          path: `/api/v1/jobs/${percentEncode(job.JobId)}/pods/${percentEncode(podId)}/logs`,
          query: {
            ...(pod.PodUid ? { PodUid: pod.PodUid } : {}),
            MaxLines: String(LOG_MAX_LINES),
            StartTime: isoSeconds(new Date(start * 1000)),
            EndTime: isoSeconds(new Date(end * 1000)),
          },
          signal,
        },
        podLogsResponse,
      );
      got = res.Logs ?? [];
      if (got.length < LOG_MAX_LINES || end <= start || windowEnd !== null) break;
      end = start + Math.floor((end - start) / 2);
    }
    if (got.length >= LOG_MAX_LINES && end <= start) {
      reportShapeMismatch({
        providerId,
        assumption: 'pai-dlc.logs.second-over-maxlines',
        detail: `pod ${podId} wrote ${LOG_MAX_LINES}+ lines within one second; later lines of that second are not read`,
      });
    }
    const fresh = got.slice(skip);
    const room = request.limit - lines.length;
    const taken = fresh.slice(0, room);
    taken.forEach((message, i) => {
      const consumed = skip + i + 1;
      const whole = consumed === got.length;
      lines.push({
        timestamp: null,
        message,
        node: podId,
        level: null,
        cursor: whole ? nextWindowCursor(incarnations, index, end) : encodeLogCursor({ key: incarnations[index]!.key, start, end, skip: consumed }),
      });
    });
    if (taken.length < fresh.length) {
      return { lines, nextCursor: encodeLogCursor({ key: incarnations[index]!.key, start, end, skip: skip + taken.length }) };
    }
    // The window is read whole: continue one second after it.
    windowStart = end + 1;
    windowEnd = null;
    skip = 0;
    start = windowStart;
  }
  if (index < incarnations.length) {
    return { lines, nextCursor: encodeLogCursor({ key: incarnations[index]!.key, start: windowStart, end: windowEnd, skip }) };
  }
  // Every incarnation read: a finished job is done, a running one may still get new pods.
  const finished = TERMINAL_STATUSES.has(mapStatus(job.Status));
  return { lines, nextCursor: finished ? null : encodeLogCursor({ key: END_KEY, start: null, end: null, skip: 0 }) };
}

function secondsOf(iso: string | null | undefined): number | null {
  if (!iso) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/** Incarnation key of a cursor that has read every incarnation there was. */
const END_KEY = '~end';

interface LogCursor {
  /** The incarnation: its PodUid. */
  key: string;
  start: number | null;
  end: number | null;
  skip: number;
}

function encodeLogCursor(c: LogCursor): string {
  return Buffer.from(JSON.stringify([c.key, c.start, c.end, c.skip]), 'utf8').toString('base64url');
}

/** The cursor after a window read whole: one second after it in the same incarnation. */
function nextWindowCursor(incarnations: readonly { key: string }[], index: number, end: number): string {
  return encodeLogCursor({ key: incarnations[index]!.key, start: end + 1, end: null, skip: 0 });
}

function decodeLogCursor(text: string | null): LogCursor | null {
  if (!text) return null;
  try {
    const v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    const isSec = (x: unknown) => x === null || (Number.isInteger(x) && (x as number) >= 0);
    if (Array.isArray(v) && v.length === 4 && typeof v[0] === 'string' && isSec(v[1]) && isSec(v[2]) && Number.isInteger(v[3]) && v[3] >= 0) {
      return { key: v[0], start: v[1], end: v[2], skip: v[3] };
    }
  } catch {
    // falls through to the error below
  }
  throw new DomainError('BAD_INPUT', 'not a PAI-DLC log cursor');
}
