// A slow platform fails its own field, never the whole answer (issue 38). A provider whose
// time-out is as long as the request's execution time-out (both 30 s by default before) used to
// turn a slow upstream into `data: null` + EXECUTION_TIMEOUT; a field now stops waiting before the
// request's deadline with UPSTREAM_TIMEOUT, the rest of the answer is kept, and the fetch goes on
// into the cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROVIDER_TIMEOUT_SECONDS } from '../../src/config/index.js';
import { DEFAULT_REQUEST_LIMITS, loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { postGraphql, startRuntimeOn } from '../support/runtime.js';

const EXECUTION_MS = 4_000;

describe('a field waits on its platform less long than the request runs', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'deadline',
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 2, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 1 },
    });
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      // The provider's time-out equals the execution time-out: what the defaults were.
      [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: EXECUTION_MS / 1000 }],
      { config: { security: loadSecurityConfig({ EXECUTION_TIMEOUT_MS: String(EXECUTION_MS) }) }, env: { BT_KEY: sim.apiKey } },
    );
  }, 120_000);

  afterAll(async () => {
    sim?.release();
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('the defaults leave room: a provider call ends before the request does', () => {
    expect(DEFAULT_PROVIDER_TIMEOUT_SECONDS * 1000).toBeLessThan(DEFAULT_REQUEST_LIMITS.executionTimeoutMs);
  });

  it('a metrics upstream that never answers: UPSTREAM_TIMEOUT on the metrics field, the job and the providers still answered', async () => {
    const list = await postGraphql(rt.url, '{ jobs(first: 5) { edges { node { id name } } } }');
    const job = list.data.jobs.edges[0].node;
    sim.inject({ kind: 'timeout', route: 'getMetrics' });
    try {
      const res = await postGraphql(rt.url, 'query($id: ID!) { providers { id } job(id: $id) { name metrics(maxPoints: 5) { name } } }', { id: job.id });
      expect(res.data, JSON.stringify(res)).not.toBeNull();
      expect(res.data.providers).toEqual([{ id: 'bt' }]);
      expect(res.data.job.name).toBe(job.name);
      expect((res.errors ?? []).map((e: any) => [e.path?.join('.'), e.extensions?.code])).toEqual([['job.metrics', 'UPSTREAM_TIMEOUT']]);
    } finally {
      sim.clearFaults();
      sim.release();
    }
  }, 30_000);
});
