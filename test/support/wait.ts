// Waiting on real processes and servers: poll until the probe has an answer, or fail naming what never came.

/**
 * The least any wait gives before calling something hung. A wait ends on its event, so this only
 * bounds a hang; the per-call figures below it were what a quiet machine needs, and a busy one
 * (issue 18: the suite beside two CPU-bound processes; a CI rehearsal beside the Postgres-kill
 * test) outran them.
 */
export const HANG_MS = 60_000;

/** Resolves with the probe's first answer that is neither `undefined` nor `false`. */
export async function eventually<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + Math.max(timeoutMs, HANG_MS);
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * For a wait made of many small steps (a thousand subscribers, each getting its sample): resolves
 * like `eventually`, and calls it hung only after HANG_MS in which `progress` did not move, however
 * long the whole takes on a busy machine.
 */
export async function eventuallyProgressing<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  progress: () => number,
  what: string,
): Promise<T> {
  let last = progress();
  let movedAt = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    const now = progress();
    if (now !== last) {
      last = now;
      movedAt = Date.now();
    } else if (Date.now() - movedAt > HANG_MS) throw new Error(`timed out waiting for ${what} (no progress for ${HANG_MS / 1000} s, at ${now})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A test's own time-out when each of its `steps` waits is bounded by HANG_MS: their sum, so a slow but moving machine never trips it before a step's own bound would. */
export const hangBound = (steps: number) => steps * HANG_MS;
