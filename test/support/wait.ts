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
