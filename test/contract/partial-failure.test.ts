// A failing part fails alone: a Primus-Lens workload whose training-metrics route answers an
// HTTP-200 error envelope is still listed with its name, status and project; only its
// trainingMetrics is null, with the typed error at exactly that path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startDemoProviders, type DemoProvider } from '../../src/simulators/demo.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';

const JOBS = `{
  jobs(first: 100, filter: { kinds: [PRIMUS_LENS] }) {
    edges { node { id name status project { id } trainingMetrics(maxPoints: 10) { id name freshness { stale error { code } } } } }
  }
}`;
const JOBS_WITHOUT_TRAINING = `{ jobs(first: 100, filter: { kinds: [PRIMUS_LENS] }) { totalCount edges { node { id status } } } }`;

type Answer = { data: any; errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[] };

describe('a failing upstream call on one field', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let demo: DemoProvider[];
  let simOrigin: string;

  beforeAll(async () => {
    demo = (await startDemoProviders()).filter((d) => d.config.kind === 'PRIMUS_LENS');
    simOrigin = new URL((demo[0]!.config as { baseUrl: string }).baseUrl).origin;
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      demo.map((d) => ({ ...d.config, timeoutSeconds: 5 }) as ProviderConfig),
      { env: Object.assign({}, ...demo.map((d) => d.secrets)), resilience: { breakerThreshold: Number.MAX_SAFE_INTEGER } },
    );
  });
  afterAll(async () => {
    await rt?.close();
    await Promise.all((demo ?? []).map((d) => d.close()));
    await db?.drop();
  });

  async function gql(query: string): Promise<Answer> {
    const res = await rt.app.fetch('http://yoga/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    return (await res.json()) as Answer;
  }

  it('keeps the Lens workload listed with its status; its trainingMetrics carry the typed error', async () => {
    const listed = await gql(JOBS_WITHOUT_TRAINING);
    expect(listed.errors).toBeUndefined();
    expect(listed.data.jobs.edges.length).toBeGreaterThan(0);

    // Lens answers a handler error as HTTP 200 with {meta: {code: 5000}} on the training-data route.
    const inject = await fetch(`${simOrigin}/__sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'status', status: 5000, route: 'metricsData' }),
    });
    expect(inject.status).toBe(204);

    const res = await gql(JOBS);
    const edges = res.data.jobs.edges as { node: { id: string; name: string; status: string; project: { id: string }; trainingMetrics: unknown[] | null } }[];
    // Every job is still there, in the same order, with what is known of it.
    expect(edges.map((e) => e.node.id)).toEqual(listed.data.jobs.edges.map((e: any) => e.node.id));
    for (const [i, e] of edges.entries()) {
      expect(e.node.name).toBeTruthy();
      expect(e.node.status).toBe(listed.data.jobs.edges[i].node.status);
      expect(e.node.project.id).toBeTruthy();
    }
    const failed = edges.map((e, i) => [e, i] as const).filter(([e]) => e.node.trainingMetrics === null);
    expect(failed.length).toBeGreaterThan(0);
    for (const [, i] of failed) {
      const error = res.errors?.find((x) => x.path?.join('/') === `jobs/edges/${i}/node/trainingMetrics`);
      expect(error, `the error of job ${i}`).toBeDefined();
      expect(error!.extensions?.code).toMatch(/^UPSTREAM_/);
    }
    // No error lands anywhere but on a trainingMetrics field.
    for (const e of res.errors ?? []) expect(e.path?.at(-1)).toBe('trainingMetrics');
  });
});
