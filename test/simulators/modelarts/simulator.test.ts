// The simulator's own contract beyond what the adapter uses: search filters and limits, the
// terminate action, and the demo starter.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../../../src/providers/registry.js';
import { signRequest } from '../../../src/providers/modelarts/signer.js';
import { startModelArtsDemo } from '../../../src/simulators/modelarts/demo.js';
import { ALL_PHASES, startModelArtsSimulator, type ModelArtsSimulator } from '../../../src/simulators/modelarts/index.js';

const ANCHOR = Date.UTC(2025, 2, 1);
let clock = ANCHOR + 30 * 60_000;
let sim: ModelArtsSimulator;

async function call(method: 'GET' | 'POST', path: string, body?: unknown) {
  const url = `${sim.url}/v2/${sim.projectId}${path}`;
  const text = body === undefined ? '' : JSON.stringify(body);
  const headers = signRequest({ method, url, headers: { 'Content-Type': 'application/json' }, body: text }, sim.credentials, new Date(clock));
  const res = await fetch(url, { method, headers, ...(text ? { body: text } : {}) });
  return { status: res.status, body: res.status === 204 ? null : ((await res.json()) as any) };
}

beforeAll(async () => {
  sim = await startModelArtsSimulator({ now: () => clock, anchorMs: ANCHOR });
});
afterAll(() => sim.close());

describe('ModelArts simulator', () => {
  it('has jobs in every phase', () => {
    expect(new Set(sim.fleet.map((j) => j.phase))).toEqual(new Set(ALL_PHASES));
  });

  it('filters by phase and name, counts matches and totals, rejects a limit over 50', async () => {
    const running = await call('POST', '/training-job-searches', { limit: 50, filters: [{ key: 'phase', operator: 'in', value: ['Running'] }] });
    expect(running.status).toBe(200);
    expect(running.body.items.every((j: any) => j.status.phase === 'Running')).toBe(true);
    // Unscoped, the search covers the default workspace "0".
    expect(running.body.count).toBe(sim.fleet.filter((j) => j.phase === 'Running' && j.workspaceId === '0').length);
    expect(running.body.total).toBe(sim.fleet.length);
    const named = await call('POST', '/training-job-searches', { limit: 5, offset: 0, filters: [{ key: 'name', operator: 'like', value: ['bert'] }] });
    expect(named.body.items.map((j: any) => j.metadata.name)).toEqual(['bert-ft']);
    const tooMany = await call('POST', '/training-job-searches', { limit: 51 });
    expect([tooMany.status, tooMany.body.error_code]).toEqual([400, 'ModelArts.0101']);
  });

  it('terminates a running job (202, Terminating, then Terminated) and refuses an ended one (409)', async () => {
    const job = sim.fleet.find((j) => j.name === 'llama-sft')!;
    const stop = await call('POST', `/training-jobs/${job.id}/actions`, { action_type: 'terminate' });
    expect([stop.status, stop.body.status.phase]).toEqual([202, 'Terminating']);
    clock += 15_000;
    expect((await call('GET', `/training-jobs/${job.id}`)).body.status.phase).toBe('Terminated');
    const again = await call('POST', `/training-jobs/${job.id}/actions`, { action_type: 'terminate' });
    expect([again.status, again.body.error_code]).toEqual([409, 'ModelArts.2796']);
  });

  it('answers an unknown job with 400 ModelArts.2775 on details and metrics', async () => {
    for (const path of ['/training-jobs/nope', '/training-jobs/nope/metrics/worker-0']) {
      const res = await call('GET', path);
      expect([res.status, res.body.error_code]).toEqual([400, 'ModelArts.2775']);
    }
  });

  it('starts as a demo provider that the registry adapter can read', async () => {
    const demo = await startModelArtsDemo({});
    try {
      expect(demo.config).toMatchObject({ id: 'modelarts-demo', kind: 'MODELARTS', name: 'Huawei Cloud ModelArts (simulated)' });
      const adapter = createAdapter(demo.config, demo.secrets);
      const page = await adapter.listJobs(null, new AbortController().signal);
      expect(page.jobs.length).toBe(50);
    } finally {
      await demo.close();
    }
  });
});
