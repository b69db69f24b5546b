// IAM token mode: the token comes from the X-Subject-Token header of a 201, is fetched once and
// cached, refreshed shortly before expires_at and once after a 401.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { modelartsConfig } from '../../../src/providers/modelarts/index.js';
import { UpstreamError } from '../../../src/domain/errors.js';
import { createModelArtsAdapter } from '../../../src/providers/modelarts/adapter.js';
import { startModelArtsSimulator, type ModelArtsSimulator } from '../../../src/simulators/modelarts/index.js';

const ANCHOR = Date.UTC(2025, 2, 1);
const HOUR = 3_600_000;
let clock = ANCHOR + HOUR;
let sim: ModelArtsSimulator;
const signal = new AbortController().signal;

function tokenAdapter(password = sim.credentials.password, projectName?: string) {
  const config = modelartsConfig.parse({
    id: 'ma-token',
    kind: 'MODELARTS',
    baseUrl: sim.url,
    projectId: sim.projectId,
    iamUrl: `${sim.url}/v3`,
    domainName: sim.credentials.domainName,
    ...(projectName ? { projectName } : {}),
    usernameEnv: 'HW_USER',
    passwordEnv: 'HW_PASSWORD',
    timeoutSeconds: 10,
  });
  return createModelArtsAdapter(config, { HW_USER: sim.credentials.userName, HW_PASSWORD: password }, { now: () => clock });
}

beforeAll(async () => {
  sim = await startModelArtsSimulator({ now: () => clock, anchorMs: ANCHOR });
});
afterAll(() => sim.close());
afterEach(() => {
  clock = ANCHOR + HOUR;
  sim.resetStats();
  sim.clearFaults();
});

describe('IAM token auth', () => {
  it('fetches the token once and reuses it across calls', async () => {
    const a = tokenAdapter();
    const page = await a.listJobs(null, signal);
    const job = page.jobs[0]!;
    await Promise.all([a.getJob(job, signal), a.getJob(job, signal), a.listJobs('1', signal)]);
    expect(sim.count('iamToken')).toBe(1);
    expect(sim.count('searchJobs')).toBe(2);
    expect(sim.count('getJob')).toBe(2);
  });

  it('scopes by project name too', async () => {
    const a = tokenAdapter(undefined, sim.region);
    expect((await a.listJobs(null, signal)).jobs).toHaveLength(50);
  });

  it('refreshes shortly before expires_at', async () => {
    const a = tokenAdapter();
    await a.listJobs(null, signal);
    clock += 23 * HOUR + 50 * 60_000;
    await a.listJobs(null, signal);
    expect(sim.count('iamToken')).toBe(1);
    clock += 6 * 60_000; // within 5 minutes of the 24 h expiry
    await a.listJobs(null, signal);
    expect(sim.count('iamToken')).toBe(2);
  });

  it('gets a new token once when ModelArts answers 401, then succeeds', async () => {
    const a = tokenAdapter();
    await a.listJobs(null, signal);
    sim.revokeTokens();
    expect((await a.listJobs(null, signal)).jobs).toHaveLength(50);
    expect(sim.count('iamToken')).toBe(2);
    expect(sim.count('searchJobs')).toBe(3);
  });

  it('gives up with UPSTREAM_AUTH when the fresh token is refused too', async () => {
    const a = tokenAdapter();
    sim.inject({ kind: 'auth', route: 'searchJobs', times: 2 });
    const err = await a.listJobs(null, signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect([(err as UpstreamError).code, (err as UpstreamError).details.upstreamCode]).toEqual(['UPSTREAM_AUTH', 'ModelArts.0201']);
    expect(sim.count('iamToken')).toBe(2);
  });

  it('maps a wrong password at IAM to UPSTREAM_AUTH without leaking it', async () => {
    const err = await tokenAdapter('wrong-password')
      .listJobs(null, signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).code).toBe('UPSTREAM_AUTH');
    expect((err as UpstreamError).message).not.toContain('wrong-password');
    expect(sim.count('searchJobs')).toBe(0);
  });
});
