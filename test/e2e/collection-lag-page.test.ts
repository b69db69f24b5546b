// The fleet view of the live page in a real headless Chromium, against the demo with the collector
// on: a platform whose collector cannot keep up gets a line saying how late it is and how many
// jobs wait; one that keeps up gets none. Its own file (it was live-page's last describe): this
// one reaches the test database, so the Postgres pass runs it, while live-page's other tests run
// on an in-memory PGlite and ran twice, once in each pass, for the same result (issue 45).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { artifactsDir, launchBrowser, nextFleetRefresh, startDemoServer, type Browser, type DemoServer } from './browser.js';

/** Generous: on a loaded CI machine a page with live charts and five simulators is slow; every wait inside is on a condition. */
const TEST_TIMEOUT = 180_000;

describe('fleet view: a line when background collection lags (Chromium)', () => {
  let server: DemoServer;
  let browser: Browser;
  let origin: string;
  let db: TestDatabase;

  beforeAll(async () => {
    // On TEST_DATABASE_URL's Postgres when set (the collector's lease and statuses live there), else PGlite.
    db = await createTestDatabase();
    // The collector on: ModelArts with a budget too small for even its job list (1 call a minute,
    // a tenth held back), so its running jobs wait and its lag grows; Baseten at its default budget
    // every 30 s, which keeps up; the others without a collector.
    [server, browser] = await Promise.all([
      startDemoServer({
        collect: { enabled: true },
        database: { databaseUrl: db.databaseUrl, dataDir: db.dataDir },
        providerCollect: (p) => (p.kind === 'MODELARTS' ? { callsPerMinute: 1 } : p.kind === 'BASETEN' ? { intervalSeconds: 30 } : { enabled: false }),
      }),
      launchBrowser(),
    ]);
    origin = new URL(server.runtime.url).origin;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.drop();
  }, TEST_TIMEOUT);

  it(
    'says which platform is behind, how late and how many jobs wait; nothing for a platform that keeps up',
    async () => {
      const page = await browser.context.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      onTestFailed(async () => {
        await page.screenshot({ path: path.join(artifactsDir(), 'fleet-collection-failure.png'), fullPage: true });
      });
      const ids = Object.fromEntries(server.demo.map((d) => [d.config.kind, d.config.id]));
      // The page's timers run on Playwright's clock, moved past the fleet view's refresh interval
      // where the test would wait for its next refresh.
      await page.clock.install();
      await page.goto(`${origin}/#fleet`);
      const line = page.locator(`#fleet-collection li[data-provider="${ids.MODELARTS}"]`);
      // The page's own rows query lists ModelArts' jobs; the collector cannot afford them: they wait, and the lag grows past two intervals.
      await expect
        .poll(() => line.textContent().catch(() => null), { timeout: 120_000 })
        .toMatch(/^Collection behind on .*ModelArts.*: \d+ s late, \d+ jobs? waiting/i);
      const [, late, waiting] = /(\d+) s late, (\d+) job/.exec((await line.textContent())!)!;
      expect(Number(late)).toBeGreaterThan(2);
      expect(Number(waiting)).toBeGreaterThan(0);
      // Baseten's collector has swept (the graph says so) and the page, read again since, has no line for it.
      await expect
        .poll(
          async () => {
            const res = await fetch(`${origin}/graphql`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ query: `{ providers { id collection { lastSweepAt backlog } } }` }),
            });
            const body = (await res.json()) as { data: { providers: { id: string; collection: { lastSweepAt: string | null; backlog: number } | null }[] } };
            return body.data.providers.find((p) => p.id === ids.BASETEN)?.collection?.lastSweepAt ?? null;
          },
          { timeout: 120_000 },
        )
        .not.toBeNull();
      const checked = await page.evaluate(() => document.body.dataset.fleetCollectionChecked);
      await expect
        .poll(() => nextFleetRefresh(page, () => document.body.dataset.fleetCollectionChecked), { timeout: 120_000, interval: 1_000 })
        .not.toBe(checked);
      const providers = await page.locator('#fleet-collection li').evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.provider));
      expect(providers).toEqual([ids.MODELARTS]);
      await page.screenshot({ path: path.join(artifactsDir(), 'fleet-collection-lag.png'), fullPage: true });
      expect(pageErrors).toEqual([]);
      await page.close();
    },
    TEST_TIMEOUT,
  );
});
