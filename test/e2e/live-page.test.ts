// The live view page in a real headless Chromium against the demo: pick a running job, see its
// per-GPU utilization chart receive live samples over graphql-ws, with status and progress; every
// asset comes from our own server (no CDN). The screenshot is kept as a test artifact.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactsDir, launchBrowser, startDemoServer, type Browser, type DemoServer } from './browser.js';

describe('live view page (Chromium)', () => {
  let server: DemoServer;
  let browser: Browser;
  beforeAll(async () => {
    [server, browser] = await Promise.all([startDemoServer(), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows a running job’s per-GPU utilization and memory updating live', async () => {
    const page = await browser.context.newPage();
    const foreign: string[] = [];
    const origin = new URL(server.runtime.url).origin;
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith(origin.replace('http', 'ws'))) foreign.push(r.url());
    });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));

    await page.goto(`${server.runtime.url}/`);
    // The picker lists the demo's jobs; choose a running Baseten job (it reports per-GPU series).
    const option = page.locator('#job option', { hasText: /BASETEN · RUNNING/ }).first();
    await option.waitFor({ state: 'attached', timeout: 20_000 });
    const jobId = await option.getAttribute('value');
    await page.selectOption('#job', jobId!);
    await page.waitForFunction((id) => document.body.dataset.job === id, jobId);

    await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 3, undefined, { timeout: 30_000 });
    expect(Number(await page.locator('#utilization').getAttribute('data-points'))).toBeGreaterThan(0);
    expect(Number(await page.locator('#memory').getAttribute('data-points'))).toBeGreaterThan(0);
    await expect.poll(() => page.locator('#granularity').textContent()).toBe('per GPU');
    expect(await page.locator('#status').textContent()).toBe('RUNNING');
    expect(await page.locator('#provider').textContent()).toContain('Baseten');
    // uPlot drew one legend entry per GPU line (plus the time column).
    expect(await page.locator('#utilization .u-legend .u-series').count()).toBeGreaterThan(1);
    expect(await page.locator('#utilization canvas').count()).toBe(1);
    expect(page.url()).toContain(`#job=${encodeURIComponent(jobId!)}`);

    await page.screenshot({ path: path.join(artifactsDir(), 'live-page.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
    expect(foreign).toEqual([]);
  });

  it('shows progress for a job whose platform reports it', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.runtime.url}/`);
    const option = page.locator('#job option', { hasText: /RUNICORN · RUNNING/ }).first();
    await option.waitFor({ state: 'attached', timeout: 20_000 });
    await page.selectOption('#job', (await option.getAttribute('value'))!);
    await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 1, undefined, { timeout: 30_000 });
    await expect.poll(() => page.locator('#progress').textContent(), { timeout: 10_000 }).toMatch(/^\d+(\.\d)?% \(/);
  });
});
