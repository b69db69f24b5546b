// Alibaba Cloud signature V3 (ACS3-HMAC-SHA256), as the fact sheet describes it and as
// @alicloud/openapi-client computes it (a test proves the two agree byte for byte).
import { createHash, createHmac, randomUUID } from 'node:crypto';

export const ACS3_ALGORITHM = 'ACS3-HMAC-SHA256';

export interface Acs3Credentials {
  accessKeyId: string;
  accessKeySecret: string;
  /** STS token: sent (and signed) as x-acs-security-token with x-acs-accesskey-id. */
  securityToken?: string;
}

export interface Acs3Request {
  method: string;
  /** The path as it goes on the wire, path parameters already percent-encoded. */
  path: string;
  query: Readonly<Record<string, string>>;
  /** Headers to send; host and every x-acs-* header (and content-type) among them are signed. */
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** RFC 3986 percent-encoding: unreserved characters stay, everything else (incl. !'()*) is escaped. */
export function percentEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The query as signed and as sent: sorted by name, RFC 3986-encoded, joined by `&`. */
export function canonicalQueryString(query: Readonly<Record<string, string>>): string {
  return Object.keys(query)
    .sort()
    .map((k) => `${percentEncode(k)}=${percentEncode(query[k]!)}`)
    .join('&');
}

export function sha256Hex(data: string): string {
  return createHash('sha256').update(data, 'utf8').digest('hex');
}

/** The x-acs-date format: UTC to the second, `YYYY-MM-DDTHH:mm:ssZ`. */
export function acsDate(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function isSignedHeader(lowerName: string): boolean {
  return lowerName === 'host' || lowerName === 'content-type' || lowerName.startsWith('x-acs-');
}

/** The Authorization header value for a request whose headers are final. */
export function acs3Authorization(req: Acs3Request, creds: Acs3Credentials): string {
  const signed = new Map<string, string>();
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (isSignedHeader(lower)) signed.set(lower, value.trim());
  }
  const names = [...signed.keys()].sort();
  const canonicalHeaders = names.map((n) => `${n}:${signed.get(n)}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    req.method.toUpperCase(),
    req.path === '' ? '/' : req.path,
    canonicalQueryString(req.query),
    canonicalHeaders,
    signedHeaders,
    sha256Hex(req.body),
  ].join('\n');
  const stringToSign = `${ACS3_ALGORITHM}\n${sha256Hex(canonicalRequest)}`;
  const signature = createHmac('sha256', creds.accessKeySecret).update(stringToSign, 'utf8').digest('hex');
  return `${ACS3_ALGORITHM} Credential=${creds.accessKeyId},SignedHeaders=${signedHeaders},Signature=${signature}`;
}

export interface SignOptions {
  action: string;
  version: string;
  /** host[:port] exactly as the HTTP client will send it. */
  host: string;
  now?: Date;
  nonce?: string;
}

/** Every header a V3-signed ROA call needs, Authorization included. */
export function signedHeadersFor(
  req: Omit<Acs3Request, 'headers'> & { headers?: Readonly<Record<string, string>> },
  creds: Acs3Credentials,
  opts: SignOptions,
): Record<string, string> {
  const headers: Record<string, string> = {
    ...(req.headers ?? {}),
    host: opts.host,
    accept: 'application/json',
    'x-acs-action': opts.action,
    'x-acs-version': opts.version,
    'x-acs-date': acsDate(opts.now ?? new Date()),
    'x-acs-signature-nonce': opts.nonce ?? randomUUID(),
    'x-acs-content-sha256': sha256Hex(req.body),
  };
  if (creds.securityToken) {
    headers['x-acs-accesskey-id'] = creds.accessKeyId;
    headers['x-acs-security-token'] = creds.securityToken;
  }
  headers.authorization = acs3Authorization({ ...req, headers }, creds);
  return headers;
}
