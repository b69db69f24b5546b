// The simulator's check of Huawei Cloud's SDK-HMAC-SHA256 request signatures, written from the
// fact sheet (never shared with the adapter's signer): rebuild the canonical request from what
// actually arrived on the wire and compare HMACs.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { SimRequest } from '../kit.js';

export const SIGNING_ALGORITHM = 'SDK-HMAC-SHA256';
/** Largest accepted distance between X-Sdk-Date and the server clock. */
export const MAX_CLOCK_SKEW_MS = 15 * 60_000;

export type SignatureCheck =
  | { ok: true; accessKey: string }
  | { ok: false; reason: 'missing' | 'malformed' | 'unknown_key' | 'stale_date' | 'mismatch'; message: string };

const AUTH_PATTERN = /^SDK-HMAC-SHA256\s+Access=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/;
const DATE_PATTERN = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** RFC 3986 unreserved characters stay, every other UTF-8 byte becomes %XX (upper-case hex). */
function encodeComponent(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function parseSdkDate(text: string): number | null {
  const m = DATE_PATTERN.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  return Number.isNaN(ms) ? null : ms;
}

function headerValue(req: SimRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function canonicalRequest(req: SimRequest, signedHeaders: string[]): string {
  // The official SDK encodes the path segments exactly as it sends them and always ends with '/'.
  const rawPath = req.url.pathname;
  let uri = rawPath.split('/').map(encodeComponent).join('/');
  if (!uri.endsWith('/')) uri += '/';

  const byKey = new Map<string, string[]>();
  for (const [k, v] of req.query) byKey.set(k, [...(byKey.get(k) ?? []), v]);
  const query = [...byKey.keys()]
    .sort()
    .flatMap((k) => [...byKey.get(k)!].sort().map((v) => `${encodeComponent(k)}=${encodeComponent(v)}`))
    .join('&');

  const headers = signedHeaders.map((h) => `${h}:${headerValue(req, h) ?? ''}\n`).join('');
  const payloadHash = headerValue(req, 'x-sdk-content-sha256') ?? sha256Hex(req.rawBody);
  return [req.method, uri, query, headers, signedHeaders.join(';'), payloadHash].join('\n');
}

export function verifySignature(req: SimRequest, secretFor: (accessKey: string) => string | undefined, nowMs: number): SignatureCheck {
  const authorization = headerValue(req, 'authorization');
  if (!authorization) return { ok: false, reason: 'missing', message: 'no Authorization header and no X-Auth-Token' };
  const m = AUTH_PATTERN.exec(authorization.trim());
  if (!m) return { ok: false, reason: 'malformed', message: 'Authorization is not an SDK-HMAC-SHA256 signature' };
  const [, accessKey, signedList, signature] = m as unknown as [string, string, string, string];

  const signedHeaders = signedList.split(';');
  if (!signedHeaders.includes('host') || !signedHeaders.includes('x-sdk-date')) {
    return { ok: false, reason: 'malformed', message: 'SignedHeaders must include host and x-sdk-date' };
  }
  const dateText = headerValue(req, 'x-sdk-date');
  const signedAt = dateText ? parseSdkDate(dateText) : null;
  if (signedAt === null) return { ok: false, reason: 'malformed', message: 'X-Sdk-Date missing or not YYYYMMDDTHHMMSSZ' };
  if (Math.abs(nowMs - signedAt) > MAX_CLOCK_SKEW_MS) {
    return { ok: false, reason: 'stale_date', message: `X-Sdk-Date ${dateText} is more than 15 minutes from the server time` };
  }
  const secret = secretFor(accessKey);
  if (secret === undefined) return { ok: false, reason: 'unknown_key', message: `access key ${accessKey} does not exist` };

  const stringToSign = [SIGNING_ALGORITHM, dateText, sha256Hex(canonicalRequest(req, signedHeaders))].join('\n');
  const expected = Buffer.from(createHmac('sha256', secret).update(stringToSign).digest('hex'));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: 'mismatch', message: 'the request signature does not match' };
  }
  return { ok: true, accessKey };
}
