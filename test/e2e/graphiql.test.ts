// GraphiQL in a real headless Chromium: it loads at /graphql from our own server (no CDN) and runs
// the README's first example query against the demo, showing data in the result pane.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactsDir, launchBrowser, startDemoServer, type Browser, type DemoServer } from './browser.js';

const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
const firstExample = readme.match(/```graphql\n([\s\S]*?)```/)![1]!;

describe('GraphiQL (Chromium)', () => {
  let server: DemoServer;
  let browser: Browser;
  beforeAll(async () => {
    [server, browser] = await Promise.all([startDemoServer(), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("loads and runs the README's first example query", async () => {
    const page = await browser.context.newPage();
    const origin = new URL(server.runtime.url).origin;
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) foreign.push(r.url());
    });
    // GraphiQL opens with the query it last stored; storing the example types it in for us.
    await page.addInitScript((query) => localStorage.setItem('graphiql:query', query), firstExample);
    await page.goto(`${server.runtime.url}/graphql`);
    const run = page.locator('.graphiql-execute-button');
    await run.waitFor({ timeout: 20_000 });
    const answered = page.waitForResponse(
      (r) => r.url().startsWith(`${origin}/graphql`) && r.request().method() === 'POST' && (r.request().postData() ?? '').includes('BasetenFleet'),
    );
    await run.click();
    const response = await answered;
    const body = await response.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.projects.length).toBeGreaterThan(0);
    // The result pane shows the answer.
    await expect.poll(() => page.locator('.graphiql-response').textContent(), { timeout: 20_000 }).toContain('"utilization"');
    expect(await page.locator('.graphiql-response').textContent()).toContain('"RATIO"');
    await page.screenshot({ path: path.join(artifactsDir(), 'graphiql.png') });
    expect(foreign).toEqual([]);
  });
});
