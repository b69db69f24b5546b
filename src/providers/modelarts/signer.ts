// Huawei Cloud AK/SK request signing (SDK-HMAC-SHA256), as the official Node SDK core computes it
// (test/providers/modelarts/signer.test.ts compares the two on the same requests).
import { createHash, createHmac } from 'node:crypto';

export const SDK_SIGNING_ALGORITHM = 'SDK-HMAC-SHA256';

export interface AkSkCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface RequestToSign {
  method: string;
  url: string;
  /** Every header set here is signed, under its lower-cased name. */
  headers: Record<string, string>;
  /** The exact body bytes that will be sent ('' for none). */
  body: string;
}

/** YYYYMMDDTHHMMSSZ in UTC. */
export function formatSdkDate(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** Percent-encodes every UTF-8 byte outside A-Z a-z 0-9 - _ . ~ with upper-case hex. */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function hexSha256(data: string): string {
  return createHash('sha256').update(data, 'utf8').digest('hex');
}

function canonicalUri(pathname: string): string {
  const uri = pathname.split('/').map(uriEncode).join('/');
  // The signature always covers a trailing slash, whether or not the request path has one.
  return uri.endsWith('/') ? uri : `${uri}/`;
}

function canonicalQuery(params: URLSearchParams): string {
  const keys = [...new Set(params.keys())].sort();
  return keys
    .flatMap((k) =>
      params
        .getAll(k)
        .sort()
        .map((v) => `${uriEncode(k)}=${uriEncode(v)}`),
    )
    .join('&');
}

/**
 * Returns the headers to send: the given ones plus X-Sdk-Date and Authorization. `Host` is signed
 * (host[:port] exactly as fetch will send it) but not returned, because fetch sets it itself.
 */
export function signRequest(req: RequestToSign, credentials: AkSkCredentials, date: Date): Record<string, string> {
  const url = new URL(req.url);
  const sdkDate = formatSdkDate(date);
  const toSend: Record<string, string> = { ...req.headers, 'X-Sdk-Date': sdkDate };
  const signed = new Map<string, string>(Object.entries(toSend).map(([k, v]) => [k.toLowerCase(), v]));
  signed.set('host', url.host);
  const names = [...signed.keys()].sort();

  const canonicalHeaders = names.map((n) => `${n}:${signed.get(n)}\n`).join('');
  const signedHeaders = names.join(';');
  const payloadHash = signed.get('x-sdk-content-sha256') ?? hexSha256(req.body);
  const canonicalRequest = [
    req.method.toUpperCase(),
    canonicalUri(url.pathname),
    canonicalQuery(url.searchParams),
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const stringToSign = [SDK_SIGNING_ALGORITHM, sdkDate, hexSha256(canonicalRequest)].join('\n');
  const signature = createHmac('sha256', credentials.secretAccessKey).update(stringToSign, 'utf8').digest('hex');

  toSend.Authorization = `${SDK_SIGNING_ALGORITHM} Access=${credentials.accessKeyId}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return toSend;
}
