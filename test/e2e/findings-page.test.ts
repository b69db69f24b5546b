// Findings in the live view page, in a real headless Chromium: the Baseten simulator with the
// demo's anomalies (a stalled job, a straggler rank, an idle node: demoAnomalies) on a clock the
// test moves, the collector and the findings evaluator on that clock. With the fleet view and the
// stalled job's view open, the evaluation that fires STALLED marks the job's fleet row and lists
// the finding (severity, since, what shows it) in the job view without a reload; the evaluation
// that resolves it removes the mark and shows the finding resolved. Screenshots of both states go
// to E2E_ARTIFACTS_DIR. On an in-memory PGlite in either pass, so only the PGlite pass runs it
// (issue 45): what it shows is the page's (the fleet row's mark, the job view's list, the live
// updates over graphql-ws). The same anomalies found and resolved by the evaluator's statement on
// PostgreSQL are test/findings/engine.test.ts's; the findings' reads, test/store/findings.test.ts's.
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { demoAnomalies } from '../../src/simulators/baseten/fleet.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { recordFindingEvents, runFindingsFor, type SeenEvent } from '../findings/helpers.js';
import { startClockedBaseten } from '../support/clocked-baseten.js';
import { ManualTimers } from '../support/manual-timers.js';
import { memoryDataDir } from '../support/pglite-template.js';
import { startRuntimeOn } from '../support/runtime.js';
import { artifactsDir, launchBrowser, type Browser } from './browser.js';

const MINUTE = 60_000;
/** The simulated clock starts at the wall clock's minute, so the page's own clock reads about the same times. */
const START = Math.floor(Date.now() / MINUTE) * MINUTE;
const TEST_TIMEOUT = 300_000;
/**
 * The stall ends 5 minutes after start (the demo's lasts 40): its finding resolves at the first
 * evaluation after. What the page shows does not depend on the stall's length, and each simulated
 * minute is a sweep and an evaluation with both pages open: 7 minutes instead of 42 (issue 45).
 */
const STALL_ENDS_MS = 5 * MINUTE;
/** The demo's anomalies, its stall cut short at STALL_ENDS_MS. */
const anomalies = () => demoAnomalies(START).map((a) => (a.kind === 'stall' ? { ...a, toMs: START + STALL_ENDS_MS } : a));

describe('findings in the live view page (Chromium, simulated clock)', () => {
  let sim: BasetenSimulator;
  let rt: Runtime;
  let timers: ManualTimers;
  let browser: Browser;
  let origin: string;
  let events: SeenEvent[];
  let stalled: string;
  const pages: Page[] = [];

  beforeAll(async () => {
    timers = new ManualTimers(START);
    // The demo's anomalies (fleet.ts, the stall shortened) over 4 running jobs of 2 nodes x 8 GPUs: rank 5 of node 1 straggles.
    sim = await startClockedBaseten('findings-page', timers, { jobsPerProject: 4, nodesPerJob: 2, gpusPerNode: 8 }, { anomalies: anomalies() });
    // demoAnomalies stalls the second running job.
    stalled = `bt:job:${sim.fleet.jobs[1]!.id}`;
    [rt, browser] = await Promise.all([
      startRuntimeOn(
        { databaseUrl: null, dataDir: memoryDataDir() },
        [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', pollIntervalSeconds: 60 }],
        {
          env: { BT_KEY: sim.apiKey },
          clock: () => timers.now(),
          liveTimers: timers,
          config: { collect: { enabled: true }, findings: { enabled: true, intervalSeconds: 60 } },
        },
      ),
      launchBrowser(),
    ]);
    events = recordFindingEvents(rt);
    origin = new URL(rt.url).origin;
  }, TEST_TIMEOUT);

  afterAll(async () => {
    for (const page of pages) await page.close().catch(() => {});
    await browser?.close();
    await rt?.close();
    await sim?.close();
  }, TEST_TIMEOUT);

  async function openPage(hash: string): Promise<{ page: Page; pageErrors: string[] }> {
    const page = await browser.context.newPage();
    pages.push(page);
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${origin}/${hash}`);
    return { page, pageErrors };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(artifactsDir(), name), fullPage: true });
  const rowKinds = (page: Page, jobId: string) => page.locator(`#fleet-rows tr[data-job="${jobId}"]`).getAttribute('data-findings');

  it(
    'marks the stalled job in the fleet and lists its finding in the job view as it fires, then shows it resolved, without a reload',
    async () => {
      const fleet = await openPage('#fleet');
      const job = await openPage(`#job=${encodeURIComponent(stalled)}`);
      onTestFailed(async () => {
        await shot(fleet.page, 'findings-fleet-failure.png');
        await shot(job.page, 'findings-job-failure.png');
      });
      // Before any evaluation: the stalled job is listed, unmarked; its view says there is nothing.
      await fleet.page.waitForFunction((id) => document.querySelector(`#fleet-rows tr[data-job="${id}"]`) !== null, stalled);
      expect(await rowKinds(fleet.page, stalled)).toBe('');
      await job.page.waitForFunction(() => /^None/.test(document.getElementById('findings-state')?.textContent ?? ''));
      expect(await job.page.locator('#findings-list li').count()).toBe(0);
      // Markers that a reload would wipe.
      for (const p of [fleet.page, job.page]) await p.evaluate(() => ((window as unknown as { marker: number }).marker = 1));

      // The collector's first sweeps store the anomalies' history; the evaluation after fires.
      await runFindingsFor(rt, timers, 2 * MINUTE, MINUTE);
      const fired = events.filter((e) => e.event === 'FIRING');
      expect(new Set(fired.map((e) => e.kind))).toEqual(new Set(['STALLED', 'STRAGGLER', 'IDLE_ALLOCATION']));
      const stall = fired.find((e) => e.kind === 'STALLED')!;
      expect(stall.jobId).toBe(stalled);

      // The fleet marks each job with its open findings, the stalled job with STALLED.
      await fleet.page.waitForFunction(
        (id) => document.querySelector<HTMLElement>(`#fleet-rows tr[data-job="${id}"]`)?.dataset.findings === 'STALLED',
        stalled,
      );
      // Every fired job's row marked (the rows are filled in one by one as their answers arrive).
      await fleet.page.waitForFunction((n) => document.querySelectorAll('#fleet-rows tr.has-findings').length >= n, fired.length);
      const marked = await fleet.page
        .locator('#fleet-rows tr.has-findings')
        .evaluateAll((rows) => rows.map((r) => `${(r as HTMLElement).dataset.job} ${(r as HTMLElement).dataset.findings}`).sort());
      expect(marked).toEqual(fired.map((e) => `${e.jobId} ${e.kind}`).sort());
      expect(await fleet.page.locator(`#fleet-rows tr[data-job="${stalled}"] .finding-badge`).getAttribute('title')).toMatch(/^CRITICAL STALLED since /);
      expect(await fleet.page.locator('#fleet-summary .fact', { hasText: 'Open findings' }).locator('b').textContent()).toBe('3 in 3 jobs');
      await shot(fleet.page, 'findings-fleet-firing.png');

      // The job view lists it: severity, kind, since when, the summary and the evidence's numbers.
      const item = job.page.locator('#findings-list li[data-kind="STALLED"]');
      await item.waitFor();
      expect(await item.getAttribute('data-state')).toBe('FIRING');
      const text = (await item.textContent()) ?? '';
      expect(text).toMatch(/^CRITICAL STALLED since /);
      expect(text).toContain('every accelerator below 5.0%');
      expect(text).toMatch(/window .* – .* · highest \d+% · threshold 5%/);
      expect(await job.page.locator('#findings-state').textContent()).toBe('1 open, live');
      await shot(job.page, 'findings-job-firing.png');

      // The stall ends: an evaluation within two minutes after (a sweep and the evaluation fall due together) resolves it.
      await runFindingsFor(rt, timers, STALL_ENDS_MS, MINUTE);
      const resolved = events.filter((e) => e.event === 'RESOLVED' && e.kind === 'STALLED');
      expect(resolved.map((e) => e.id)).toEqual([stall.id]);

      await fleet.page.waitForFunction(
        (id) => !/STALLED/.test(document.querySelector<HTMLElement>(`#fleet-rows tr[data-job="${id}"]`)?.dataset.findings ?? 'STALLED'),
        stalled,
      );
      await item.and(job.page.locator('[data-state="RESOLVED"]')).waitFor();
      expect(await item.textContent()).toMatch(/^CRITICAL STALLED resolved /);
      expect(await job.page.locator('#findings-state').textContent()).toBe('None open now (live); the latest resolved:');
      await shot(fleet.page, 'findings-fleet-resolved.png');
      await shot(job.page, 'findings-job-resolved.png');

      // Neither page was reloaded.
      for (const p of [fleet.page, job.page]) expect(await p.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
      expect([...fleet.pageErrors, ...job.pageErrors]).toEqual([]);
    },
    TEST_TIMEOUT,
  );
});
