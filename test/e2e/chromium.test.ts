// Without Chromium the browser tests say so in one line that names the path and the fix.
import { describe, expect, it } from 'vitest';
import { resolveChromium } from './chromium.js';

describe('finding Chromium', () => {
  it('names the missing browser and how to get it, in one line', () => {
    const at = '/nonexistent/tg-test/chromium';
    let message = '';
    try {
      resolveChromium(at);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toBe(
      `The browser tests (test/e2e) need Chromium at ${at}, which does not exist: install it (Debian/Ubuntu: apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary.`,
    );
    expect(message).not.toContain('\n');
  });

  it('answers a path that exists', () => {
    expect(resolveChromium(process.execPath)).toBe(process.execPath);
  });
});
