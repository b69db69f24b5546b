// Where the browser tests find Chromium, and the one line they fail with when it is not there
// (playwright's own "Executable doesn't exist" box names neither the suite nor the fix).
import { existsSync } from 'node:fs';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

export function missingChromium(at: string): string {
  return `The browser tests (test/e2e) need Chromium at ${at}, which does not exist: install it (Debian/Ubuntu: apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary.`;
}

/** CHROMIUM_PATH, else Debian's chromium; throws the one-line message when the file is missing. */
export function resolveChromium(at: string = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM): string {
  if (!existsSync(at)) throw new Error(missingChromium(at));
  return at;
}
