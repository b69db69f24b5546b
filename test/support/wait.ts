// Waiting on real processes and servers: poll until the probe has an answer, or fail naming what never came.

/** Resolves with the probe's first answer that is neither `undefined` nor `false`. */
export async function eventually<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
