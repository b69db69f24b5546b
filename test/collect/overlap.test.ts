// How far back a collected running job's metrics fetch reaches: an interval before the last
// fetch's end (for samples a platform publishes after their timestamp), but at most
// METRICS_OVERLAP_MAX_MS. At an hourly interval each sweep fetched and merged the whole previous
// hour again. Read off the requests the Baseten simulator receives, on the test's clock.
import { afterAll, describe, expect, it } from 'vitest';
import { METRICS_OVERLAP_MAX_MS } from '../../src/collect/collector.js';
import type { SimRequest } from '../../src/simulators/kit.js';
import { createTestDatabase } from '../support/database.js';
import { type CollectedBaseten, runFor, startCollectedBaseten, sweepsSettled } from './helpers.js';

describe("a collected running job's metrics fetch", () => {
  let bt: CollectedBaseten | undefined;
  afterAll(() => bt?.close());

  for (const intervalMs of [3_600_000, 120_000]) {
    const overlap = Math.min(intervalMs, METRICS_OVERLAP_MAX_MS);
    it(`at an interval of ${intervalMs / 1000} s starts ${overlap / 1000} s before the last one's end`, async () => {
      await bt?.close();
      bt = await startCollectedBaseten(await createTestDatabase(), `collect-overlap-${intervalMs}`, { jobsPerProject: 1, gpusPerNode: 1 }, { intervalMs });
      const { rt, sim, timers } = bt;
      const windows: { job: string; start: number; end: number }[] = [];
      sim.events.on('request', (route: string, req: SimRequest) => {
        if (route !== 'getMetrics') return;
        // The adapter asks by POST (a JSON body) or GET (the query), as the platform takes both.
        const fields = req.method === 'POST' ? (req.body as Record<string, unknown>) : Object.fromEntries(req.query);
        windows.push({ job: req.params.jobId!, start: Number(fields.start_epoch_millis), end: Number(fields.end_epoch_millis) });
      });
      // The first sweep ran as the runtime started; the second is the first this listener sees.
      await sweepsSettled(rt);
      await runFor(rt, timers, intervalMs, intervalMs / 4);
      const first = new Map(windows.map((w) => [w.job, w]));
      expect(first.size).toBeGreaterThan(0);
      windows.length = 0;
      await runFor(rt, timers, intervalMs, intervalMs / 4);
      expect(windows.length).toBeGreaterThan(0);
      for (const w of windows) {
        const last = first.get(w.job)!;
        expect(last, w.job).toBeDefined();
        expect(w.start, w.job).toBe(last.end - overlap);
        expect(w.end, w.job).toBe(last.end + intervalMs);
      }
    });
  }
});
