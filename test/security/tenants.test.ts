// Two API tokens scoped to different providers / projects: every query, entity lookup and
// subscription answers only what the token may see, and an id outside the scope looks exactly
// like an unknown id. Also: no token -> 401; a non-loopback HOST without tokens is refused; and
// no provider secret appears in any response or log line of this file's run.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import { loadSecurityConfig, sha256Hex } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startDemoProviders, type DemoProvider } from '../../src/simulators/demo.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';

const ADMIN = 'admin-token-0123456789abcdef';
const TOKEN_A = 'tenant-a-token-0123456789abcdef';
const TOKEN_B = 'tenant-b-token-0123456789abcdef';

describe('tenants', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let demo: DemoProvider[];
  let tokensFile: string;
  const logLines: string[] = [];
  const responses: string[] = [];
  let secrets: string[] = [];
  let all: { id: string; providerId: string; projectId: string; status: string; gpuCount: number | null }[] = [];
  let projectB: string;

  async function gql(token: string | null, query: string, variables?: Record<string, unknown>) {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    const text = await res.text();
    responses.push(text);
    return { status: res.status, body: JSON.parse(text) as { data?: any; errors?: { message: string; extensions?: any }[] } };
  }

  function writeTokens(entries: object[]) {
    writeFileSync(tokensFile, JSON.stringify({ tokens: entries }));
  }

  beforeAll(async () => {
    demo = (await startDemoProviders()).filter((d) => d.config.kind === 'BASETEN' || d.config.kind === 'MODELARTS');
    secrets = demo.flatMap((d) => Object.values(d.secrets)).filter((v) => v.length >= 6);
    tokensFile = join(mkdtempSync(join(tmpdir(), 'tokens-')), 'tokens.json');
    writeTokens([
      { name: 'admin', sha256: sha256Hex(ADMIN) },
      { name: 'a', sha256: sha256Hex(TOKEN_A), providers: ['modelarts-demo'] },
    ]);
    db = await createTestDatabase();
    const capture = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    rt = await startRuntimeOn(
      db,
      demo.map((d) => d.config as ProviderConfig),
      {
        config: { logLevel: 'debug', security: loadSecurityConfig({ API_TOKENS_FILE: tokensFile }) },
        env: Object.assign({}, ...demo.map((d) => d.secrets)),
        logDestination: capture,
      },
    );
    const list = await gql(ADMIN, `{ jobs(first: 500) { edges { node { id status gpuCount provider { id } project { id } } } } }`);
    expect(list.body.errors, JSON.stringify(list.body).slice(0, 500)).toBeUndefined();
    all = list.body.data.jobs.edges.map((e: any) => ({
      id: e.node.id,
      providerId: e.node.provider.id,
      projectId: e.node.project.id,
      status: e.node.status,
      gpuCount: e.node.gpuCount,
    }));
    const btProjects = [...new Set(all.filter((j) => j.providerId === 'baseten-demo').map((j) => j.projectId))];
    expect(btProjects.length).toBeGreaterThan(1);
    projectB = btProjects[0]!;
    // B: one Baseten project only. The file is re-read when it changes (at most once a second).
    writeTokens([
      { name: 'admin', sha256: sha256Hex(ADMIN) },
      { name: 'a', sha256: sha256Hex(TOKEN_A), providers: ['modelarts-demo'] },
      { name: 'b', sha256: sha256Hex(TOKEN_B), providers: ['baseten-demo'], projects: [projectB] },
    ]);
    // Waits for the new file to be in force (token b answers), not for a duration.
    await eventually(async () => (await gql(TOKEN_B, '{ providers { id } }')).status === 200, 30_000, 'the rewritten tokens file to take effect');
  }, 60_000);

  afterAll(async () => {
    await rt?.close();
    await Promise.all((demo ?? []).map((d) => d.close()));
    await db?.drop();
  });

  const sees = {
    a: (j: { providerId: string }) => j.providerId === 'modelarts-demo',
    b: (j: { providerId: string; projectId: string }) => j.providerId === 'baseten-demo' && j.projectId === projectB,
  };
  const tokenOf = { a: TOKEN_A, b: TOKEN_B };

  it('refuses requests without a valid token with 401 UNAUTHENTICATED', async () => {
    for (const token of [null, 'wrong-token-0123456789abcdef']) {
      const res = await gql(token, '{ providers { id } }');
      expect(res.status).toBe(401);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
  });

  for (const t of ['a', 'b'] as const) {
    it(`token ${t}: providers, projects, jobs and counts hold only its own`, async () => {
      const mine = all.filter(sees[t]);
      expect(mine.length).toBeGreaterThan(0);
      const res = await gql(tokenOf[t], `{ providers { id } projects { id } jobs(first: 500) { totalCount edges { node { id project { id } } } } }`);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.providers.map((p: any) => p.id)).toEqual(t === 'a' ? ['modelarts-demo'] : ['baseten-demo']);
      for (const p of res.body.data.projects) expect(t === 'a' ? p.id.startsWith('modelarts-demo:') : p.id === projectB).toBe(true);
      expect(res.body.data.jobs.edges.map((e: any) => e.node.id).sort()).toEqual(mine.map((j) => j.id).sort());
      expect(res.body.data.jobs.totalCount).toBe(mine.length);
      // Asking for someone else's provider or project by filter gives nothing, not an error.
      const other = all.find((j) => !sees[t](j))!;
      const filtered = await gql(
        tokenOf[t],
        `query($p: ID!, $pr: ID!) { a: jobs(filter: { providerIds: [$p] }) { totalCount } b: jobs(filter: { projectId: $pr }) { totalCount } }`,
        {
          p: other.providerId,
          pr: other.projectId,
        },
      );
      expect(filtered.body.data).toEqual({ a: { totalCount: 0 }, b: { totalCount: 0 } });
    });

    it(`token ${t}: job, project and _entities by id answer outside the scope exactly as for unknown ids`, async () => {
      const unknownJob = `${all[0]!.providerId}:job:does-not-exist`;
      const unknown = await gql(tokenOf[t], 'query($id: ID!) { job(id: $id) { id } }', { id: unknownJob });
      const shape = (e: any, id: string) => ({ code: e.extensions.code, message: e.message.replace(id, '<id>') });
      const unknownShape = shape(unknown.body.errors![0], unknownJob);
      expect(unknownShape.code).toBe('NOT_FOUND');
      for (const j of all.slice(0, 60)) {
        const res = await gql(tokenOf[t], 'query($id: ID!) { job(id: $id) { id } }', { id: j.id });
        if (sees[t](j)) expect(res.body.data.job.id).toBe(j.id);
        else {
          expect(res.body.data).toEqual({ job: null });
          expect(shape(res.body.errors![0], j.id)).toEqual(unknownShape);
        }
      }
      for (const projectId of [...new Set(all.map((j) => j.projectId))]) {
        const res = await gql(tokenOf[t], 'query($id: ID!) { project(id: $id) { id } }', { id: projectId });
        const visible = t === 'a' ? projectId.startsWith('modelarts-demo:') : projectId === projectB;
        if (visible) expect(res.body.data.project.id).toBe(projectId);
        else expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      }
      // Entities: every job, its project, and its nodes and GPUs (learnt by an admin query first).
      const topo = await gql(ADMIN, `{ jobs(first: 40) { edges { node { id nodes { id gpus { id } } } } } }`);
      const reps: { __typename: string; id: string; owner: { providerId: string; projectId: string } }[] = [];
      for (const e of topo.body.data.jobs.edges) {
        const owner = all.find((j) => j.id === e.node.id)!;
        reps.push(
          { __typename: 'Job', id: e.node.id, owner },
          { __typename: 'Project', id: owner.projectId, owner },
          { __typename: 'Provider', id: owner.providerId, owner },
        );
        for (const n of e.node.nodes) {
          reps.push({ __typename: 'ComputeNode', id: n.id, owner });
          for (const g of n.gpus) reps.push({ __typename: 'Gpu', id: g.id, owner });
        }
      }
      expect(reps.some((r) => r.__typename === 'Gpu')).toBe(true);
      const res = await gql(
        tokenOf[t],
        'query($r: [_Any!]!) { _entities(representations: $r) { ... on Job { id } ... on Project { id } ... on Provider { id } ... on ComputeNode { id } ... on Gpu { id } } }',
        { r: reps.map(({ __typename, id }) => ({ __typename, id })) },
      );
      expect(res.body.errors).toBeUndefined();
      res.body.data._entities.forEach((got: any, i: number) => {
        const r = reps[i]!;
        const visible = r.__typename === 'Provider' ? (t === 'a' ? r.id === 'modelarts-demo' : r.id === 'baseten-demo') : sees[t](r.owner);
        expect(got, `${r.__typename} ${r.id}`).toEqual(visible ? { id: r.id } : null);
      });
    });
  }

  it("subscriptions: connectionParams carry the token; others' jobs are unknown; a revoked token is refused per subscription", async () => {
    // A running job with accelerators: a feed sends nothing until it has a point (or the job ends),
    // so a job without readings would never answer the first subscription.
    const jobA = all.find((j) => sees.a(j) && j.status === 'RUNNING' && (j.gpuCount ?? 0) > 0)!.id;
    const jobB = all.find(sees.b)!.id;
    const client = createClient({
      url: `${rt.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${TOKEN_A}` },
      retryAttempts: 0,
      lazy: true,
    });
    const first = (jobId: string) =>
      new Promise<{ data?: any; errors?: any[] }>((resolve) => {
        let done = false;
        const stop = client.subscribe(
          { query: 'subscription($id: ID!) { jobUtilization(jobId: $id) { job { id } } }', variables: { id: jobId } },
          {
            next: (v) => {
              if (!done) (done = true), stop(), resolve(v as never);
            },
            error: (e) => {
              if (!done) (done = true), resolve({ errors: Array.isArray(e) ? e : [e] });
            },
            complete: () => {
              if (!done) (done = true), resolve({});
            },
          },
        );
      });
    const own = await first(jobA);
    expect(own.errors).toBeUndefined();
    expect(own.data.jobUtilization.job.id).toBe(jobA);
    const foreign = await first(jobB);
    expect((foreign.errors as any[])[0].extensions.code).toBe('NOT_FOUND');
    // Revoke A: the open connection's next subscription is refused.
    writeTokens([
      { name: 'admin', sha256: sha256Hex(ADMIN) },
      { name: 'b', sha256: sha256Hex(TOKEN_B), providers: ['baseten-demo'], projects: [projectB] },
    ]);
    // The open connection's next subscription is refused once the file is re-read (waited for as
    // that refusal, not for a duration).
    const revoked = await eventually(
      async () => {
        const r = await first(jobA);
        return (r.errors as any[] | undefined)?.[0]?.extensions?.code === 'UNAUTHENTICATED' && r;
      },
      30_000,
      'the revocation to take effect',
    );
    expect((revoked.errors as any[])[0].extensions.code).toBe('UNAUTHENTICATED');
    await client.dispose();
    // A connection without a token is closed at init with 4403.
    const closed = await new Promise<number>((resolve) => {
      const c = createClient({
        url: `${rt.url.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        on: { closed: (e) => resolve((e as { code: number }).code) },
      });
      c.subscribe({ query: '{ providers { id } }' }, { next: () => {}, error: () => {}, complete: () => {} });
    });
    expect(closed).toBe(4403);
  });

  it('refuses a non-loopback HOST without tokens unless told to run open or serving the demo', async () => {
    await expect(startRuntimeOn(db, [], { config: { host: '0.0.0.0', security: loadSecurityConfig({}) } })).rejects.toThrow(/not a loopback address/);
    const open = await startRuntimeOn(db, [], { config: { host: '0.0.0.0', security: loadSecurityConfig({ ALLOW_OPEN: 'true' }) } });
    await open.close();
    // The demo (no providers file: simulators only) has nothing to protect: `docker compose up` serves it as is.
    const demo = await startRuntimeOn(db, null, { config: { host: '0.0.0.0', security: loadSecurityConfig({}) } });
    expect(demo.providers.all().every((p) => p.simulated)).toBe(true);
    await demo.close();
  });

  it('no provider secret appears in any response or log line of this run', async () => {
    // Failures render the platforms' own error bodies; the secrets must not ride along.
    await gql(ADMIN, `{ providers { id name health { lastError { code message } } } }`);
    expect(secrets.length).toBeGreaterThan(0);
    expect(responses.length).toBeGreaterThan(50);
    expect(logLines.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      for (const r of responses) expect(r.includes(secret)).toBe(false);
      for (const l of logLines) expect(l.includes(secret)).toBe(false);
    }
  });
});
