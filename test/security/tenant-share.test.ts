// Tenants cannot starve each other. A noisy token sends `_entities` with 200 made-up job ids while
// the platform holds every lookup it gets; the simulator's request log shows the noisy token never
// had more than its share of the provider in flight, and another tenant's series fetch goes
// through meanwhile (while the noisy lookups are still held: the order of events, not a
// duration). Unknown ids are remembered for a while (asking again costs no upstream call), and for
// a project-scoped token an unknown id and another project's job cost the same: no upstream call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';

const ADMIN = 'admin-token-0123456789abcdef';
const NOISY = 'noisy-token-0123456789abcdef';
const PROJECT = 'project-token-0123456789abcdef';
const SHARE = 2;

describe('per-tenant share of a provider', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let jobs: { id: string; status: string; project: { id: string } }[] = [];

  async function gql(token: string, query: string, variables?: Record<string, unknown>) {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as { data?: any; errors?: { message: string; extensions?: any }[] };
  }

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'share',
      rateLimit: false,
      fleet: { projects: 2, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2 },
    });
    db = await createTestDatabase();
    const projectIds = sim.fleet.projects.map((p) => `bt:project:${p.id}`);
    rt = await startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 5 }], {
      config: {
        security: loadSecurityConfig({
          API_TOKENS: JSON.stringify([
            { name: 'admin', token: ADMIN },
            { name: 'noisy', token: NOISY, providers: ['bt'] },
            { name: 'project', token: PROJECT, projects: [projectIds[0]] },
          ]),
        }),
      },
      env: { BT_KEY: sim.apiKey },
      // Series always go upstream, so the quiet tenant's lookup needs a slot of the provider.
      cachePolicy: { metricsTtlMs: 0 },
      resilience: { retries: 0, maxConcurrent: 4, maxConcurrentPerTenant: SHARE, maxQueuedPerTenant: 8 },
    });
    const list = await gql(ADMIN, '{ jobs(first: 50) { edges { node { id status project { id } } } } }');
    jobs = list.data.jobs.edges.map((e: any) => e.node);
  }, 120_000);

  afterAll(async () => {
    sim?.clearFaults();
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('keeps a noisy tenant to its share while another tenant is served', async () => {
    const quietJob = jobs.find((j) => j.status === 'RUNNING') ?? jobs[0]!;
    // The platform holds every by-id lookup (the noisy tenant's) and answers everything else.
    sim.inject({ kind: 'timeout', route: 'searchJobs' });
    sim.resetStats();
    const ids = Array.from({ length: 200 }, (_, i) => `bt:job:made-up-${i}`);
    const ENTITIES = 'query($r: [_Any!]!) { _entities(representations: $r) { ... on Job { id } } }';
    let noisyDone = false;
    const noisy = gql(NOISY, ENTITIES, { r: ids.map((id) => ({ __typename: 'Job', id })) }).finally(() => (noisyDone = true));
    await eventually(() => sim.count('searchJobs') >= SHARE, 30_000, 'the noisy tenant to fill its share');

    const quiet = await gql(ADMIN, 'query($id: ID!) { job(id: $id) { metrics(maxPoints: 10) { name } } }', { id: quietJob.id });
    expect(quiet.errors, JSON.stringify(quiet.errors)).toBeUndefined();
    expect(sim.count('getMetrics')).toBeGreaterThan(0);
    // Served while the noisy lookups were still held, and the noisy tenant never had more than its share out.
    expect(noisyDone).toBe(false);
    expect(sim.count('searchJobs')).toBe(SHARE);

    // Released (the held lookups time out, the queued ones are answered): its overflow was refused as
    // rate-limited, its own and nobody else's.
    sim.clearFaults();
    const answer = await noisy;
    const codes = new Set((answer.errors ?? []).map((e) => e.extensions?.code));
    expect(codes.has('UPSTREAM_RATE_LIMITED'), JSON.stringify([...codes])).toBe(true);
    expect(sim.count('searchJobs')).toBeLessThanOrEqual(SHARE + 8 + SHARE);
  }, 120_000);

  it('remembers unknown ids for a while: asking again costs no upstream call', async () => {
    const ids = Array.from({ length: 5 }, (_, i) => `bt:job:never-${i}`);
    const ask = () =>
      gql(ADMIN, 'query($r: [_Any!]!) { _entities(representations: $r) { ... on Job { id } } }', { r: ids.map((id) => ({ __typename: 'Job', id })) });
    sim.resetStats();
    const first = await ask();
    expect(first.data._entities).toEqual([null, null, null, null, null]);
    expect(sim.count('searchJobs')).toBe(5);
    const again = await ask();
    expect(again.data._entities).toEqual([null, null, null, null, null]);
    expect(sim.count('searchJobs')).toBe(5);
  });

  it("a project-scoped token: an unknown id and another project's job cost the same (no upstream call)", async () => {
    const own = jobs.filter((j) => j.project.id === `bt:project:${sim.fleet.projects[0]!.id}`);
    const other = jobs.find((j) => j.project.id !== `bt:project:${sim.fleet.projects[0]!.id}`)!;
    sim.resetStats();
    const JOB = 'query($id: ID!) { job(id: $id) { id } }';
    const outOfScope = await gql(PROJECT, JOB, { id: other.id });
    const unknown = await gql(PROJECT, JOB, { id: 'bt:job:does-not-exist-anywhere' });
    const mine = await gql(PROJECT, JOB, { id: own[0]!.id });
    expect(outOfScope.data.job).toBeNull();
    expect(unknown.data.job).toBeNull();
    expect(mine.data.job).toEqual({ id: own[0]!.id });
    expect(outOfScope.errors?.map((e) => [e.extensions?.code, e.message.replace(other.id, 'ID')])).toEqual(
      unknown.errors?.map((e) => [e.extensions?.code, e.message.replace('bt:job:does-not-exist-anywhere', 'ID')]),
    );
    expect(sim.count('searchJobs') + sim.count('getJob')).toBe(0);
  });
});
