// Unit conversion into the canonical units (ratio 0..1, bytes, cores, bytes/s, UTC dates).
// Every conversion returns null for the platforms' missing-data markers instead of a number.

export const MIB = 1024 * 1024;
export const GIB = 1024 * MIB;

/** A finite number, or null for NaN, ±Inf, null, undefined and non-numeric strings. */
export function finiteOrNull(value: unknown): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

export function percentToRatio(value: unknown): number | null {
  const n = finiteOrNull(value);
  return n === null ? null : n / 100;
}

/** A number given in tera-units (TFLOP/s) in the base unit (FLOP/s); null for anything not a finite number. */
export function teraToBase(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value * 1e12 : null;
}

export function mibToBytes(value: unknown): number | null {
  const n = finiteOrNull(value);
  return n === null ? null : n * MIB;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  m: 1e6,
  mb: 1e6,
  g: 1e9,
  gb: 1e9,
  t: 1e12,
  tb: 1e12,
  ki: 1024,
  kib: 1024,
  mi: MIB,
  mib: MIB,
  gi: GIB,
  gib: GIB,
  ti: GIB * 1024,
  tib: GIB * 1024,
};

/**
 * Parses sizes as platforms print them: "8GB", "192GB", "16Gi", "188Gi", "512 MiB".
 * Decimal units (GB) are read as powers of 1000 and binary units (Gi, GiB) as powers of 1024;
 * GPU vendors quote "80GB" for 80 GiB parts, so callers that know better pass `gbIsBinary`.
 */
export function parseSizeToBytes(text: unknown, opts: { gbIsBinary?: boolean } = {}): number | null {
  if (typeof text === 'number') return Number.isFinite(text) ? text : null;
  if (typeof text !== 'string') return null;
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return null;
  let unit = m[2]!.toLowerCase();
  if (opts.gbIsBinary && /^[kmgt]b$/.test(unit)) unit = `${unit[0]}i`;
  const factor = SIZE_UNITS[unit];
  return factor === undefined ? null : Number(m[1]) * factor;
}

export function epochMillisToDate(value: unknown): Date | null {
  const n = finiteOrNull(value);
  return n === null || n <= 0 ? null : new Date(n);
}

export function epochSecondsToDate(value: unknown): Date | null {
  const n = finiteOrNull(value);
  return n === null || n <= 0 ? null : new Date(Math.round(n * 1000));
}

/**
 * Instants seen lately, as ISO strings: a job's series share their instants (every GPU sampled at
 * the same times), so answers and cache writes convert each instant once instead of once per series.
 */
const isoStrings = new Map<number, string>();
const ISO_STRINGS_KEPT = 10_000;

/** `d.toISOString()`, remembered for the instants seen lately. */
export function isoString(d: Date): string {
  const ms = d.getTime();
  let text = isoStrings.get(ms);
  if (text === undefined) {
    text = d.toISOString();
    if (isoStrings.size >= ISO_STRINGS_KEPT) isoStrings.clear();
    isoStrings.set(ms, text);
  }
  return text;
}

/** Instants parsed lately, by their text: a platform sends the same instants for every series of a job. */
const parsedInstants = new Map<string, number>();

export function isoToDate(value: unknown): Date | null {
  const ms = isoToMillis(value);
  return Number.isNaN(ms) ? null : new Date(ms);
}

/** An ISO instant as epoch ms, NaN when it is none (no Date made: for points read as columns). */
export function isoToMillis(value: unknown): number {
  if (typeof value !== 'string' || value === '') return Number.NaN;
  let ms = parsedInstants.get(value);
  if (ms === undefined) {
    ms = Date.parse(value);
    if (parsedInstants.size >= ISO_STRINGS_KEPT) parsedInstants.clear();
    parsedInstants.set(value, ms);
  }
  return ms;
}

/** Epoch nanoseconds as a decimal string (Baseten log timestamps) to a Date, without float loss. */
export function epochNanosStringToDate(value: unknown): Date | null {
  if (typeof value !== 'string' || !/^[0-9]+$/.test(value)) return null;
  const ms = BigInt(value) / 1_000_000n;
  return ms > 0n ? new Date(Number(ms)) : null;
}
