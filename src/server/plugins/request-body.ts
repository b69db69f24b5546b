// A request's body, read under the body-size cap whatever its content type or framing (a declared
// length, chunked, endless), and turned into GraphQL parameters per media type; a malformed body
// is a coded 400, never an internal error.
import { GraphQLError } from 'graphql';

export function requestError(message: string, code: string, status: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code, http: { status } } });
}

export const CONTENT_LENGTH = /^\d+$/;

/**
 * Reads a body up to `max` bytes; one byte more and it stops reading and refuses the request. A
 * body with a declared length (already checked against `max`) is read whole: Node's HTTP parser
 * delivers exactly that many bytes, never more, and reading it as text skips the web stream.
 * Not itself async: a request with a declared length (nearly all) costs the body's own promise only.
 */
export function readCapped(request: Request, max: number): Promise<string> {
  const declared = request.headers.get('content-length');
  if (declared !== null && CONTENT_LENGTH.test(declared) && Number(declared) <= max && !request.headers.has('transfer-encoding')) {
    return request.text();
  }
  return readStreamCapped(request, max);
}

async function readStreamCapped(request: Request, max: number): Promise<string> {
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw requestError(`the request body is larger than ${max} bytes`, 'PAYLOAD_TOO_LARGE', 413);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseForm(text: string): Record<string, unknown> {
  const form = new URLSearchParams(text);
  const body: Record<string, unknown> = {};
  for (const key of ['query', 'operationName']) if (form.has(key)) body[key] = form.get(key);
  for (const key of ['variables', 'extensions']) {
    const raw = form.get(key);
    if (raw === null || raw === '') continue;
    try {
      body[key] = JSON.parse(raw);
    } catch {
      throw requestError(`the "${key}" field is not valid JSON`, 'BAD_REQUEST', 400);
    }
  }
  return body;
}

function parseJsonBody(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw requestError('the request body is not valid JSON', 'BAD_REQUEST', 400);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw requestError('the request body must be a JSON object with "query"', 'BAD_REQUEST', 400);
  }
  return body as Record<string, unknown>;
}

const parseGraphqlBody = (text: string): Record<string, unknown> => ({ query: text });

/** The media types a POST may carry and how each becomes GraphQL parameters; anything else is 415. */
export function bodyParser(contentType: string): ((text: string) => Record<string, unknown>) | null {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return parseJsonBody;
  if (type === 'application/graphql') return parseGraphqlBody;
  if (type === 'application/x-www-form-urlencoded') return parseForm;
  return null;
}
