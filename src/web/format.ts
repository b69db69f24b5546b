// How numbers, instants and durations read on the page.
export const GIB = 1024 ** 3;

export const percent = (v: number) => `${(v * 100).toFixed(0)}%`;
/** A value already in GiB (charts keep memory in GiB so their ticks fall on round numbers). */
export const gib = (v: number) => `${v.toFixed(v >= 10 ? 0 : 1)} GiB`;

/** A training metric: short but with enough digits to see a loss move. */
export function metricValue(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

/** 3725 -> "1 h 2 min"; 42 -> "42 s". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** An instant as local clock time, with the date when it is not today. */
export function clock(ms: number, now = Date.now()): string {
  const d = new Date(ms);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return new Date(now).toDateString() === d.toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

/** "12 s ago", "3 min ago". */
export function ago(ms: number, now = Date.now()): string {
  return now - ms < 1500 ? 'just now' : `${duration((now - ms) / 1000)} ago`;
}

/** A provider's display name, marked simulated once (demo names already say so). */
export function providerLabel(p: { name: string; simulated: boolean }): string {
  return p.simulated && !/simulated/i.test(p.name) ? `${p.name} (simulated)` : p.name;
}
