// The live view page in a real headless Chromium against the demo (all five simulators, polled
// every second): the fleet view lists running jobs of every platform and refreshes in place; the
// job view follows one job at a time (switching leaves exactly one utilization feed on the server
// and only the current job's lines in the chart), opens finished jobs from history and says when an
// id is unknown, and draws training loss for Primus-Lens and Runicorn. Every asset comes from our
// own server (no CDN). Screenshots of each view are kept in E2E_ARTIFACTS_DIR.
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { artifactsDir, launchBrowser, nextFleetRefresh, startDemoServer, type Browser, type DemoServer } from './browser.js';

interface DemoJob {
  id: string;
  name: string;
  status: string;
  provider: { kind: string };
}

const LAPTOP = { width: 1366, height: 768 };
/** Generous: on a loaded CI machine a page with live charts and five simulators is slow; every wait inside is on a condition. */
const TEST_TIMEOUT = 180_000;

describe('live view page (Chromium)', () => {
  let server: DemoServer;
  let browser: Browser;
  let origin: string;
  let jobs: DemoJob[];
  /** Closed after each test, so one test's live subscriptions and timers do not load the next. */
  const pages: Page[] = [];

  async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const res = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data: T };
    return body.data;
  }

  const pick = (kind: string, status: string, skip = 0) => {
    const found = jobs.filter((j) => j.provider.kind === kind && j.status === status)[skip];
    if (!found) throw new Error(`the demo has no ${status} ${kind} job #${skip}`);
    return found;
  };

  const named = (name: string) => {
    const found = jobs.find((j) => j.name === name);
    if (!found) throw new Error(`the demo has no job named ${name}`);
    return found;
  };

  /** A page that records page errors and any request leaving our server. */
  async function openPage(): Promise<{ page: Page; pageErrors: string[]; foreign: string[] }> {
    const page = await browser.context.newPage();
    pages.push(page);
    await page.setViewportSize(LAPTOP);
    const pageErrors: string[] = [];
    const foreign: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith(origin.replace('http', 'ws')) && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    return { page, pageErrors, foreign };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(artifactsDir(), name), fullPage: true });

  beforeAll(async () => {
    [server, browser] = await Promise.all([startDemoServer(), launchBrowser()]);
    origin = new URL(server.runtime.url).origin;
    jobs = (await gql<{ jobs: { nodes: DemoJob[] } }>(`{ jobs(first: 100) { nodes { id name status provider { kind } } } }`)).jobs.nodes;
  });
  afterEach(async () => {
    for (const page of pages.splice(0)) await page.close();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  }, TEST_TIMEOUT);

  it(
    'switches jobs five times and keeps exactly one live utilization feed, drawing only the current job',
    async () => {
      const { page, pageErrors, foreign } = await openPage();
      const route = [
        pick('BASETEN', 'RUNNING', 0),
        pick('PRIMUS_LENS', 'RUNNING', 0),
        pick('BASETEN', 'RUNNING', 1),
        pick('PAI_DLC', 'RUNNING', 0),
        pick('PRIMUS_LENS', 'RUNNING', 1),
        named('bert-ft'),
      ];
      await page.goto(`${origin}/#job=${encodeURIComponent(route[0]!.id)}`);
      await page.waitForFunction(() => document.body.dataset.ready === 'true');
      for (const [i, job] of route.entries()) {
        if (i > 0) await page.selectOption('#job', job.id);
        await page.waitForFunction((id) => document.body.dataset.job === id, job.id);
        // Every other job is left before its first sample, the others after a few: both orders of dispose and complete.
        if (i % 2 === 0) await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 2, undefined, { timeout: 90_000 });
      }
      const current = route.at(-1)!;
      await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 3, undefined, { timeout: 90_000 });

      // The server: one utilization feed, the current job's, and one subscriber per open stream of the page.
      const topics = () => Object.keys(server.runtime.live.hub.stats().polls).filter((t) => t.startsWith('live:utilization:'));
      await expect.poll(topics, { timeout: 15_000 }).toEqual([`live:utilization:${current.id}`]);
      const gauge = async () => Number((await (await fetch(`${origin}/metrics`)).text()).match(/^training_graph_live_subscribers (\d+)/m)?.[1]);
      // jobUtilization + jobLogs of the current job, nothing left over from the five before it.
      await expect.poll(gauge, { timeout: 15_000 }).toBe(2);

      // The chart: only the current job's lines (ModelArts reports per node).
      const nodes = (
        await gql<{ job: { nodes: { name: string }[] } }>(`query($id: ID!) { job(id: $id) { nodes { name } } }`, { id: current.id })
      ).job.nodes.map((n) => n.name);
      const lines = ((await page.locator('#utilization').getAttribute('data-lines')) ?? '').split('\n').filter(Boolean);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(nodes).toContain(line);
      expect(await page.locator('#granularity').textContent()).toMatch(/^per node/);
      expect(await page.locator('#status').textContent()).toMatch(/^RUNNING/);
      expect(await page.locator('#provider').textContent()).not.toMatch(/simulated\).*simulated/);
      expect(await page.locator('#interval').textContent()).toBe('every 1 s');
      expect(await page.locator('#last-sample').textContent()).toMatch(/\d/);
      // The legend shows current values, not dashes.
      await expect.poll(() => page.locator('#utilization .legend-item.line .value').first().textContent(), { timeout: 30_000 }).toMatch(/^\d+%$/);
      expect(await page.locator('#utilization .legend-item.mean .value').textContent()).toMatch(/^\d+%$/);
      await shot(page, 'job-modelarts-after-switches.png');

      // Back walks the switches, one job at a time.
      await page.goBack();
      await page.waitForFunction((id) => document.body.dataset.job === id, route.at(-2)!.id);
      expect(pageErrors).toEqual([]);
      expect(foreign).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'shows a running per-GPU job with mean, band, legend values, 16 distinct line styles and live logs',
    async () => {
      const { page, pageErrors } = await openPage();
      const job = pick('BASETEN', 'RUNNING', 0);
      await page.goto(`${origin}/#job=${encodeURIComponent(job.id)}`);
      await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 2, undefined, { timeout: 90_000 });
      expect(await page.locator('#granularity').textContent()).toBe('per GPU');
      expect(Number(await page.locator('#utilization').getAttribute('data-points'))).toBeGreaterThan(0);
      expect(await page.locator('#memory').getAttribute('data-state')).toBe('data');
      const lineCount = await page.locator('#utilization .legend-item.line').count();
      expect(lineCount).toBeGreaterThanOrEqual(2);
      // Each line's swatch differs from every other's (colour or dash).
      const swatches = await page.locator('#utilization .legend-item.line .swatch').evaluateAll((els) => els.map((e) => (e as HTMLElement).style.borderTop));
      expect(new Set(swatches).size).toBe(swatches.length);
      await page.waitForFunction(() => Number(document.getElementById('log-pane')?.dataset.lines ?? 0) > 0, undefined, { timeout: 90_000 });
      await shot(page, 'job-baseten-live.png');
      expect(pageErrors).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'opens a finished job by URL from its history, says so for an unknown id, and goes back and forward',
    async () => {
      const { page, pageErrors } = await openPage();
      const finished = pick('MODELARTS', 'SUCCEEDED', 0);
      await page.goto(`${origin}/#job=${encodeURIComponent(finished.id)}`);
      await page.waitForFunction(() => document.body.dataset.jobState === 'finished', undefined, { timeout: 90_000 });
      await page.waitForFunction(() => document.getElementById('utilization')?.dataset.state === 'data', undefined, { timeout: 90_000 });
      expect(Number(await page.locator('#utilization').getAttribute('data-points'))).toBeGreaterThan(1);
      expect(await page.locator('#status').textContent()).toMatch(/^SUCCEEDED/);
      expect(await page.locator('#job-name').textContent()).toBe(finished.name);
      expect(await page.locator('#eta').textContent()).toMatch(/^ended /);
      await page.waitForFunction((id) => (document.getElementById('job') as HTMLSelectElement).value === id, finished.id);
      await shot(page, 'job-finished-history.png');

      // A failed job shows the platform's reason beside its status, as the API has it.
      const failed = named('gpt-crash-reserving');
      const { job: fromApi } = await gql<{ job: { failureReason: string | null } }>(`query($id: ID!) { job(id: $id) { failureReason } }`, { id: failed.id });
      expect(fromApi.failureReason).toBeTruthy();
      await page.goto(`${origin}/#job=${encodeURIComponent(failed.id)}`);
      await page.waitForFunction(() => document.body.dataset.jobState === 'finished', undefined, { timeout: 90_000 });
      await expect.poll(() => page.locator('#failure').textContent(), { timeout: 30_000 }).toBe(fromApi.failureReason);
      expect(await page.locator('#failure').isVisible()).toBe(true);
      expect(await page.locator('#status').textContent()).toMatch(/^FAILED/);
      await shot(page, 'job-failed-reason.png');

      // An id no platform has: the page says so and shows no other job.
      const unknown = 'modelarts-demo:job:00000000-0000-0000-0000-000000000000';
      await page.goto(`${origin}/#job=${encodeURIComponent(unknown)}`);
      await page.waitForFunction(() => document.body.dataset.jobState === 'unknown', undefined, { timeout: 90_000 });
      expect(await page.locator('#notice').textContent()).toContain(`No job with id “${unknown}”`);
      expect(await page.locator('#utilization').getAttribute('data-state')).toBe('empty');
      expect(await page.locator('#job').inputValue()).not.toBe(finished.id);
      await shot(page, 'job-unknown-id.png');

      // Keyboard: f opens the fleet; back returns to the unknown id, then the failed job; forward again.
      await page.keyboard.press('f');
      await page.waitForFunction(() => document.body.dataset.view === 'fleet');
      await page.goBack();
      await page.waitForFunction((id) => document.body.dataset.view === 'job' && document.body.dataset.job === id, unknown);
      await page.goBack();
      await page.waitForFunction((id) => document.body.dataset.job === id && document.body.dataset.jobState === 'finished', failed.id, { timeout: 90_000 });
      await page.goForward();
      await page.waitForFunction((id) => document.body.dataset.job === id, unknown);
      expect(pageErrors).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'draws training loss by step for a Primus-Lens and a Runicorn job, and says why Runicorn has no GPU charts',
    async () => {
      const { page, pageErrors } = await openPage();
      for (const [kind, status, file] of [
        ['PRIMUS_LENS', 'RUNNING', 'job-primus-lens-loss.png'],
        ['RUNICORN', 'SUCCEEDED', 'job-runicorn-loss.png'],
      ] as const) {
        const job = pick(kind, status);
        await page.goto(`${origin}/#job=${encodeURIComponent(job.id)}`);
        const loss = page.locator('#training-charts [data-metric="loss"]');
        await loss.waitFor({ timeout: 90_000 });
        await page.waitForFunction(() => document.querySelector<HTMLElement>('#training-charts [data-metric="loss"]')?.dataset.state === 'data', undefined, {
          timeout: 90_000,
        });
        expect(Number(await loss.getAttribute('data-points'))).toBeGreaterThan(1);
        expect(await loss.locator('canvas').count()).toBe(1);
        if (kind === 'RUNICORN') {
          expect(await page.locator('#utilization').getAttribute('data-state')).toBe('empty');
          expect(await page.locator('#utilization .empty').textContent()).toContain('reports no system metrics');
          expect(await page.locator('#granularity').textContent()).toMatch(/training metrics only/);
          expect(await page.locator('#granularity').textContent()).not.toMatch(/per node/);
        } else {
          await page.waitForFunction(() => document.getElementById('utilization')?.dataset.state === 'data', undefined, { timeout: 90_000 });
          // Primus-Lens has no log API: the pane says so rather than "finished".
          await expect.poll(() => page.locator('#log-state').textContent(), { timeout: 30_000 }).toMatch(/^No logs: Primus-Lens/);
        }
        await shot(page, file);
      }
      expect(pageErrors).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'draws the fleet rows before the waste column: the waste query waits for the rows, and the page says "computing…" until it lands',
    async () => {
      const { page, pageErrors } = await openPage();
      // Hold the page's first waste query in the browser, noting whether the rows were drawn when it
      // left: asked beside the rows' query, it kept that one waiting on the one embedded database.
      let wasteLeft!: (rows: number) => void;
      const rowsWhenWasteLeft = new Promise<number>((r) => (wasteLeft = r));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let held = false;
      await page.route(`${origin}/graphql`, async (route) => {
        if (held || !route.request().postData()?.includes('LiveViewFleetWaste')) return route.continue();
        held = true;
        wasteLeft(await page.locator('#fleet-rows tr[data-job]').count());
        await released;
        await route.continue();
      });
      await page.goto(`${origin}/#fleet`);
      expect(await rowsWhenWasteLeft).toBeGreaterThan(0);
      // Rows are there, the waste column is not yet.
      expect(await page.evaluate(() => document.body.dataset.fleetWasteUpdated)).toBeUndefined();
      const wasteCells = await page.locator('#fleet-rows tr[data-job] td:nth-child(6) small').allTextContents();
      expect(wasteCells.length).toBeGreaterThan(0);
      expect(new Set(wasteCells)).toEqual(new Set(['computing…']));
      release();
      await page.waitForFunction(() => document.body.dataset.fleetWasteUpdated !== undefined, undefined, { timeout: 120_000 });
      expect(await page.locator('#fleet-rows tr[data-job] td:nth-child(6)', { hasText: 'GPU-h' }).count()).toBeGreaterThan(0);
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      expect(pageErrors).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    "shows each row's waste, cost and idle share and a total row from the demo's example price table, sortable by cost",
    async () => {
      const { page, pageErrors } = await openPage();
      onTestFailed(async () => {
        await shot(page, 'fleet-cost-failure.png');
      });
      await page.goto(`${origin}/#fleet?sort=cost`);
      await page.waitForFunction(() => document.body.dataset.fleetWasteUpdated !== undefined, undefined, { timeout: 120_000 });
      expect(await page.locator('th[aria-sort="descending"] button').getAttribute('data-sort')).toBe('cost');
      // Priced rows show an amount in the table's currency and their idle share.
      const costs = await page.locator('#fleet-rows tr[data-job] td:nth-child(7)').allTextContents();
      const priced = costs.filter((c) => /^\d+\.\d\d USD/.test(c));
      expect(priced.length, JSON.stringify(costs)).toBeGreaterThan(0);
      // An accelerator job's idle share; a CPU-only job (the demo bills ModelArts' and PAI-DLC's per node-hour) has none to show, and says so.
      expect(
        priced.every((c) => /USD idle$|idle share not known: CPU-only$/.test(c)),
        JSON.stringify(priced),
      ).toBe(true);
      expect(priced.some((c) => /USD idle$/.test(c))).toBe(true);
      // Most expensive first.
      const amounts = costs.map((c) => (/^(\d+\.\d\d) USD/.exec(c)?.[1] ? Number(/^(\d+\.\d\d) USD/.exec(c)![1]) : -1));
      expect(amounts).toEqual([...amounts].sort((a, b) => b - a));
      // Waste per row: GPU-hours of the jobs that hold GPUs.
      const wastes = (await page.locator('#fleet-rows tr[data-job] td:nth-child(6)').allTextContents()).map((c) => /^(\d+\.\d) GPU-h/.exec(c)?.[1]);
      expect(wastes.filter((w) => w !== undefined).length, JSON.stringify(wastes)).toBeGreaterThan(0);
      // The total row under them: the window's waste and cost of every running job, the rows' sums
      // (each row is shown rounded: 0.05 GPU-h and 0.005 USD at most off each).
      const totalRow = page.locator('#fleet-total tr.total');
      expect(await totalRow.locator('td').first().textContent()).toMatch(/^Total, last hour\d+ running jobs? in the window$/);
      const totalWaste = /^(\d+\.\d) GPU-h/.exec((await totalRow.locator('td:nth-child(6)').textContent()) ?? '');
      expect(totalWaste, 'total waste').not.toBeNull();
      const rowWaste = wastes.reduce((a, w) => a + Number(w ?? 0), 0);
      expect(Math.abs(Number(totalWaste![1]) - rowWaste)).toBeLessThanOrEqual(0.05 * (wastes.length + 1));
      const totalCost = /^(\d+\.\d\d) USD/.exec((await totalRow.locator('td:nth-child(7)').textContent()) ?? '');
      expect(totalCost, 'total cost').not.toBeNull();
      const rowCost = amounts.filter((a) => a >= 0).reduce((a, b) => a + b, 0);
      expect(Math.abs(Number(totalCost![1]) - rowCost)).toBeLessThanOrEqual(0.005 * (amounts.length + 1));
      // The summary's fact says the same total cost (or why it is not known).
      const total = page.locator('#fleet-summary .fact', { hasText: 'Cost, last hour' });
      expect(await total.locator('b').textContent()).toMatch(
        /^\d+\.\d\d USD \((\d+\.\d\d USD idle|\d+\.\d\d USD idle on GPU jobs; CPU-only not known|idle share not known: CPU-only)\)$|^not known: /,
      );
      expect(await total.locator('b').textContent()).toContain(/^(\d+\.\d\d) USD/.exec((await totalRow.locator('td:nth-child(7)').textContent()) ?? '')![1]);
      await shot(page, 'fleet-cost.png');
      await totalRow.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifactsDir(), 'fleet-cost-total.png') });
      expect(pageErrors).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'lists running jobs of all five platforms in the fleet view, refreshes in place and filters by platform in the URL',
    async () => {
      const { page, pageErrors, foreign } = await openPage();
      onTestFailed(async () => {
        await shot(page, 'fleet-failure.png');
      });
      // The page's timers run on Playwright's clock: it flows with real time, and the test moves it
      // past the fleet view's refresh interval where it would wait for the next refresh.
      await page.clock.install();
      await page.goto(`${origin}/`);
      expect(page.url()).toMatch(/#fleet$/);
      await page.waitForFunction(() => Number(document.body.dataset.fleetRefreshes ?? 0) >= 1, undefined, { timeout: 120_000 });
      const kinds = await page
        .locator('#fleet-rows tr[data-provider]')
        .evaluateAll((rows) => [...new Set(rows.map((r) => (r as HTMLElement).dataset.provider))].sort());
      expect(kinds).toEqual(['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN']);
      // Rows are sorted by waste, most first, and per-GPU jobs show one strip cell per GPU.
      expect(await page.locator('th[aria-sort="descending"] button').getAttribute('data-sort')).toBe('waste');
      const lens = pick('PRIMUS_LENS', 'RUNNING');
      expect(Number(await page.locator(`#fleet-rows tr[data-job="${lens.id}"] .strip`).getAttribute('data-cells'))).toBeGreaterThan(1);
      await shot(page, 'fleet.png');

      // Updated live: a later refresh lands without a reload (the page's own state survives).
      await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
      const first = await page.evaluate(() => document.body.dataset.fleetUpdated);
      await expect.poll(() => nextFleetRefresh(page, () => document.body.dataset.fleetUpdated), { timeout: 120_000, interval: 1_000 }).not.toBe(first);
      expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);

      // Filter by platform: the URL says so, every row is that platform's, back clears it.
      const lensProvider = lens.id.split(':')[0]!;
      await page.selectOption('#fleet-provider', lensProvider);
      await page.waitForFunction((p) => location.hash === `#fleet?provider=${p}` && document.body.dataset.fleetProvider === p, lensProvider);
      await page.waitForFunction(
        () => {
          const rows = [...document.querySelectorAll<HTMLElement>('#fleet-rows tr[data-provider]')];
          return rows.length > 0 && rows.every((r) => r.dataset.provider === 'PRIMUS_LENS');
        },
        undefined,
        { timeout: 120_000 },
      );
      await shot(page, 'fleet-primus-lens.png');
      await page.goBack();
      await page.waitForFunction(
        () =>
          location.hash === '#fleet' &&
          new Set([...document.querySelectorAll<HTMLElement>('#fleet-rows tr[data-provider]')].map((r) => r.dataset.provider)).size === 5,
        undefined,
        { timeout: 120_000 },
      );

      // A row opens its job (keyboard: focus the link, Enter).
      const link = page.locator(`#fleet-rows tr[data-job="${lens.id}"] a`);
      await link.focus();
      await page.keyboard.press('Enter');
      await page.waitForFunction((id) => document.body.dataset.view === 'job' && document.body.dataset.job === id, lens.id);
      expect(pageErrors).toEqual([]);
      expect(foreign).toEqual([]);
    },
    TEST_TIMEOUT,
  );
});
