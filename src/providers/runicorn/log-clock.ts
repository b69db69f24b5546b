// Instants for logs.txt lines. log_text writes only the writer's local "HH:MM:SS"; the run id is
// the same local clock at creation with a date, and created_time is that instant in UTC, which
// gives the writer's UTC offset at creation but not its time zone. The offset can change during
// a run (daylight saving), so every line is read under each time zone that had that offset at
// creation (plus the fixed offset itself), in order: a reading is dropped when it would put a
// line before the previous one or after the run's end, and a line whose remaining readings
// disagree gets no timestamp (null: uncertain) rather than a guessed one.

const RUN_ID = /^(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})_/;
const CLOCK_PREFIX = /^(\d{2}):(\d{2}):(\d{2}) \| /;
const QUARTER_HOUR_MS = 15 * 60_000;
const DAY_MS = 86_400_000;
/** Lines share seconds and threads interleave: this much going backwards is not a new day. */
const JITTER_MS = 5_000;
/** Zone changes are whole quarter hours, at least 30 min (Lord Howe); a smaller gap hides none. */
const ZONE_CHANGE_GAP_MS = 25 * 60_000;
/** How far past the run's known end a line may be (status.json is written after the last line). */
const END_SLACK_MS = 10 * 60_000;

/** An offset timeline: `offsets[i]` holds from `from[i]` (UTC ms) on; offsets in ms (local - UTC). */
interface Timeline {
  from: number[];
  offsets: number[];
  /** The distinct values of `offsets`. */
  distinct?: number[];
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function zoneOffsetMs(zone: string, utcMs: number): number | null {
  let f = formatters.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    } catch {
      return null;
    }
    formatters.set(zone, f);
  }
  const name = f.formatToParts(new Date(utcMs)).find((p) => p.type === 'timeZoneName')?.value ?? '';
  if (name === 'GMT') return 0;
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name);
  if (!m) return null;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60_000;
}

let zoneNames: string[] | null = null;
function allZones(): string[] {
  zoneNames ??= typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return zoneNames;
}

/**
 * A zone's offset changes within [from, to], found by daily samples and bisection to the millisecond
 * (offset changes are months apart; a change and its reversal within one day would be missed).
 */
function zoneTimeline(zone: string, from: number, to: number): Timeline | null {
  const first = zoneOffsetMs(zone, from);
  if (first === null) return null;
  const out: Timeline = { from: [Number.NEGATIVE_INFINITY], offsets: [first] };
  const stepMs = DAY_MS;
  let prevT = from;
  let prevOff = first;
  for (let t = from + stepMs; prevT < to; t += stepMs) {
    const at = Math.min(t, to);
    const off = zoneOffsetMs(zone, at);
    if (off === null) return null;
    if (off !== prevOff) {
      let lo = prevT;
      let hi = at;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (zoneOffsetMs(zone, mid) === prevOff) lo = mid;
        else hi = mid;
      }
      out.from.push(hi);
      out.offsets.push(off);
      prevOff = off;
    }
    prevT = at;
  }
  return out;
}

function offsetAt(t: Timeline, utcMs: number): number {
  let i = t.offsets.length - 1;
  while (i > 0 && utcMs < t.from[i]!) i--;
  return t.offsets[i]!;
}

/** The smallest instant >= notBefore whose local clock under `t` reads `clockMs` into a day. */
function nextInstant(t: Timeline, clockMs: number, notBefore: number): number | null {
  const localDay = Math.floor((notBefore + offsetAt(t, notBefore)) / DAY_MS) * DAY_MS;
  const offsets = (t.distinct ??= [...new Set(t.offsets)]);
  let best: number | null = null;
  for (let k = -1; k <= 2; k++) {
    const local = localDay + k * DAY_MS + clockMs;
    if (best !== null && local - 2 * DAY_MS > best) break;
    for (const off of offsets) {
      const x = local - off;
      if (offsetAt(t, x) !== off || x < notBefore) continue;
      if (best === null || x < best) best = x;
    }
  }
  return best;
}

export interface LogClockOptions {
  runId: string;
  createdAt: Date | null;
  /** The latest instant a line can have: the run's end if known, else now (asked per line). */
  notAfter: () => Date;
}

/**
 * Fed lines in file order; `at(i)` is line i's instant, or null when it has no clock prefix (console
 * capture) or the instant cannot be told. A reading ruled out by a later line no longer counts for
 * the earlier ones, so a line's answer can go from null to an instant as more lines are fed (never
 * from one instant to another). One clock per run.
 */
export class LogClock {
  private readonly readings: { timeline: Timeline; previous: number; alive: boolean }[] = [];
  private readonly notAfter: () => number;
  private created = 0;
  private offset = 0;
  /** Zone readings are added at the first gap a zone change could explain (see feed). */
  private zonesLoaded = false;
  /** Per line: its instant (all readings agree), null (no clock), or each reading's instant. */
  private readonly lines: (number | null | (number | null)[])[] = [];
  /** Past this instant (UTC ms) the zone changes looked up no longer cover the run: make a new clock. */
  validUntil = Number.POSITIVE_INFINITY;

  constructor(opts: LogClockOptions) {
    this.notAfter = () => opts.notAfter().getTime() + END_SLACK_MS;
    const m = RUN_ID.exec(opts.runId);
    if (!m || !opts.createdAt) return;
    const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
    this.created = opts.createdAt.getTime();
    this.offset = Math.round((Date.UTC(y!, mo! - 1, d!, h!, mi!, s!) - this.created) / QUARTER_HOUR_MS) * QUARTER_HOUR_MS;
    this.readings.push({ timeline: { from: [Number.NEGATIVE_INFINITY], offsets: [this.offset] }, previous: this.created - 1000, alive: true });
  }

  /** Lines fed so far. */
  get fed(): number {
    return this.lines.length;
  }

  /**
   * Every zone with the writer's offset at creation, as one reading per distinct offset timeline,
   * starting where the fixed-offset reading stands: up to here no line pair had a gap a zone
   * change could hide in, so every zone reads the lines so far the same way.
   */
  private loadZones(previous: number): void {
    this.zonesLoaded = true;
    const fixed = this.readings[0]!.timeline;
    const key = (t: Timeline) => JSON.stringify([t.from.slice(1), t.offsets]);
    const distinct = new Map<string, Timeline>([[key(fixed), fixed]]);
    // Zone changes are looked up to a week past now or the run's end (at most 400 days of run);
    // a clock used past validUntil must be made again.
    const windowEnd = Math.max(this.created, Math.min(this.notAfter() + 7 * DAY_MS, this.created + 400 * DAY_MS));
    this.validUntil = windowEnd - END_SLACK_MS;
    for (const zone of allZones()) {
      if (zoneOffsetMs(zone, this.created) !== this.offset) continue;
      const t = zoneTimeline(zone, this.created, windowEnd);
      if (t) distinct.set(key(t), t);
    }
    for (const timeline of [...distinct.values()].slice(1)) this.readings.push({ timeline, previous, alive: this.readings[0]!.alive });
  }

  feed(line: string): void {
    const c = CLOCK_PREFIX.exec(line);
    if (!c || this.readings.length === 0) {
      this.lines.push(null);
      return;
    }
    const clockMs = ((Number(c[1]) * 60 + Number(c[2])) * 60 + Number(c[3])) * 1000;
    if (!this.zonesLoaded) {
      // A zone change shows as a jump of the fixed-offset reading (forward by the change, or back,
      // read as the next day); lines closer together than that leave no room for one.
      const fixed = this.readings[0]!;
      const x = nextInstant(fixed.timeline, clockMs, fixed.previous - JITTER_MS);
      if (x !== null && x - fixed.previous < ZONE_CHANGE_GAP_MS && x <= this.notAfter()) {
        fixed.previous = Math.max(fixed.previous, x);
        this.lines.push(x);
        return;
      }
      this.loadZones(fixed.previous);
    }
    const notAfter = this.notAfter();
    const each: (number | null)[] = [];
    for (const r of this.readings) {
      let x: number | null = null;
      if (r.alive) {
        x = nextInstant(r.timeline, clockMs, r.previous - JITTER_MS);
        if (x === null || x > notAfter) {
          r.alive = false;
          x = null;
        } else r.previous = Math.max(r.previous, x);
      }
      each.push(x);
    }
    this.lines.push(each);
  }

  /** Line i's instant under every reading still possible, or null when they disagree. */
  at(i: number): Date | null {
    const v = this.lines[i];
    if (v === null || v === undefined) return null;
    if (typeof v === 'number') return new Date(v);
    let found: number | null = null;
    for (let k = 0; k < v.length; k++) {
      if (!this.readings[k]!.alive) continue;
      const x = v[k];
      if (x === null || x === undefined || (found !== null && x !== found)) return null;
      found = x;
    }
    return found === null ? null : new Date(found);
  }
}
