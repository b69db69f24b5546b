// Provider credentials must never leave the process. Every secret an adapter reads is registered
// here when it is read (config/providers-config.ts requireSecret), so the one place an upstream
// failure becomes an error (UpstreamError's constructor) can scrub it from the platform's words
// before they reach a field, an event, a log line or a metric. The server checks every outgoing
// byte against the same list as a last line (server/outgoing-guard.ts).
//
// A secret quoted by a platform does not always arrive as typed: it may be JSON-escaped (once in
// the platform's body, again in ours), URL-encoded, base64'd (inside a Basic header, at any byte
// offset) or hex'd. `secretForms` lists every spelling we look for.

/** Values shorter than this would match ordinary text; no real credential is that short. */
export const MIN_SECRET_LENGTH = 6;
/** A base64 or hex fragment shorter than this matches random text too often to be a finding. */
const MIN_ENCODED_FRAGMENT = 8;
/** Registered secrets are few (a handful per provider plus session tokens); this bounds a leak of registrations. */
const MAX_REGISTERED = 10_000;
/** Longest upstream message kept in an error; a platform's whole HTML error page is not a message. */
const MAX_MESSAGE_CHARS = 500;

const registered = new Set<string>();
let formsCache: string[] | null = null;

/** Remembers a credential (an API key, a password, a session token) so no output can carry it. */
export function registerSecret(value: string | null | undefined): void {
  if (!value || value.length < MIN_SECRET_LENGTH || registered.has(value)) return;
  if (registered.size >= MAX_REGISTERED) registered.delete(registered.values().next().value!);
  registered.add(value);
  formsCache = null;
}

export function registeredSecrets(): string[] {
  return [...registered];
}

/** Base64 fragments of `secret` that appear whatever its byte offset inside a longer base64 text. */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const whole = Math.floor(padded.length / 3) * 3;
    // Characters mixing prefix bits (first ceil(offset*8/6)) or unknown following bytes are dropped.
    const encoded = padded.subarray(0, whole).toString('base64');
    const core = encoded.slice(Math.ceil((offset * 8) / 6));
    if (core.length >= MIN_ENCODED_FRAGMENT) {
      out.push(core);
      const url = core.replace(/\+/g, '-').replace(/\//g, '_');
      if (url !== core) out.push(url);
    }
  }
  return out;
}

/** Every spelling of a secret we look for: raw, JSON-escaped once and twice, URL-encoded, base64, hex. */
export function secretForms(secret: string): string[] {
  const json1 = JSON.stringify(secret).slice(1, -1);
  const json2 = JSON.stringify(json1).slice(1, -1);
  const forms = [secret, json1, json2, encodeURIComponent(secret), encodeURIComponent(secret).replace(/%20/g, '+'), encodeURI(secret), ...base64Cores(secret)];
  const hex = Buffer.from(secret, 'utf8').toString('hex');
  if (hex.length >= MIN_ENCODED_FRAGMENT) forms.push(hex, hex.toUpperCase());
  // Longest first, so a longer spelling is replaced before a shorter one inside it.
  return [...new Set(forms)].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

export function formsOf(secrets: Iterable<string>): string[] {
  const all = new Set<string>();
  for (const s of secrets) for (const f of secretForms(s)) all.add(f);
  return [...all].sort((a, b) => b.length - a.length);
}

/** Every spelling of every registered secret, longest first (recomputed only when one is added). */
export function registeredForms(): string[] {
  formsCache ??= formsOf(registered);
  return formsCache;
}

/** Replaces every spelling of every secret in a text with [redacted]. */
export function scrubSecrets(text: string, forms: readonly string[] = registeredForms()): string {
  let out = text;
  for (const f of forms) if (out.includes(f)) out = out.split(f).join('[redacted]');
  return out;
}

/**
 * What a platform's own words may contribute to an error: secrets scrubbed, control characters
 * (NUL, escape sequences that would rewrite a terminal reading the log) replaced, length bounded.
 */
export function sanitiseUpstreamText(text: string): string {
  // eslint-disable-next-line no-control-regex
  const plain = scrubSecrets(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ' ');
  return plain.length > MAX_MESSAGE_CHARS ? `${plain.slice(0, MAX_MESSAGE_CHARS)}…` : plain;
}
