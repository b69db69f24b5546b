// The gateway's check of Alibaba Cloud's V3 signature (ACS3-HMAC-SHA256), written from the fact
// sheet independently of the adapter's signer: it rebuilds the canonical request from what arrived
// on the wire and recomputes the HMAC with the secret it knows for the presented AccessKeyId.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export interface SignatureCheckInput {
  method: string;
  /** The path exactly as sent (already percent-encoded). */
  rawPath: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
}

export type SignatureVerdict = { ok: true; accessKeyId: string; nonce: string; dateMs: number } | { ok: false; status: number; code: string; message: string };

const ALGORITHM = 'ACS3-HMAC-SHA256';
const MANDATORY_SIGNED = ['host', 'x-acs-action', 'x-acs-content-sha256', 'x-acs-date', 'x-acs-signature-nonce', 'x-acs-version'];

function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function canonicalQueryOf(query: URLSearchParams): string {
  const pairs = [...query.entries()].map(([k, v]) => [rfc3986(k), rfc3986(v)] as const);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

const fail = (status: number, code: string, message: string): SignatureVerdict => ({ ok: false, status, code, message });

/**
 * Checks the Authorization header against the request. `secretFor` returns null for an unknown key.
 * Freshness and nonce reuse are the caller's business (they need the server's clock and memory).
 */
export function verifyAcs3Signature(input: SignatureCheckInput, secretFor: (accessKeyId: string) => string | null): SignatureVerdict {
  const authorization = headerValue(input.headers, 'authorization');
  if (!authorization) return fail(400, 'MissingAuthorization', 'Authorization is mandatory for this action.');
  const m = /^ACS3-HMAC-SHA256 Credential=([^,]+),SignedHeaders=([^,]+),Signature=([0-9a-f]{64})$/.exec(authorization.trim());
  if (!m) return fail(400, 'IncompleteSignature', 'The request signature does not conform to Aliyun standards.');
  const [, accessKeyId, signedHeaderList, signature] = m as unknown as [string, string, string, string];

  const signedHeaders = signedHeaderList.split(';');
  const missing = MANDATORY_SIGNED.filter((h) => !signedHeaders.includes(h) || headerValue(input.headers, h) === undefined);
  if (missing.length > 0) {
    return fail(400, 'IncompleteSignature', `The request signature does not conform to Aliyun standards: ${missing.join(', ')} must be signed.`);
  }
  const secret = secretFor(accessKeyId);
  if (secret === null) return fail(404, 'InvalidAccessKeyId.NotFound', 'Specified access key is not found.');

  const payloadHash = createHash('sha256').update(input.rawBody).digest('hex');
  if (headerValue(input.headers, 'x-acs-content-sha256') !== payloadHash) {
    return fail(400, 'SignatureDoesNotMatch', 'The request body does not match x-acs-content-sha256.');
  }

  const date = headerValue(input.headers, 'x-acs-date')!;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(date) || Number.isNaN(Date.parse(date))) {
    return fail(400, 'InvalidTimeStamp.Format', 'Specified time stamp or date value is not well formatted.');
  }

  const canonicalHeaders = [...signedHeaders]
    .sort()
    .map((h) => `${h}:${(headerValue(input.headers, h) ?? '').trim()}\n`)
    .join('');
  const canonicalRequest = [
    input.method.toUpperCase(),
    input.rawPath === '' ? '/' : input.rawPath,
    canonicalQueryOf(input.query),
    canonicalHeaders,
    [...signedHeaders].sort().join(';'),
    payloadHash,
  ].join('\n');
  const stringToSign = `${ALGORITHM}\n${createHash('sha256').update(canonicalRequest).digest('hex')}`;
  const expected = createHmac('sha256', secret).update(stringToSign).digest();
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return fail(400, 'SignatureDoesNotMatch', 'Specified signature is not matched with our calculation.');
  }
  return { ok: true, accessKeyId, nonce: headerValue(input.headers, 'x-acs-signature-nonce')!, dateMs: Date.parse(date) };
}
