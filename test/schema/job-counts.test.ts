// One answer agrees with itself (issue 45): the counts a job shows come from the same knowledge as
// the nodes and GPUs listed beside them. On a cold cache a Baseten job's nodes are learnt from its
// metrics during the very answer that asks for them (the platform's job list does not say how
// many nodes a job runs on); the job's gpuCount in that answer follows them, whichever field of
// the selection comes first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

const gpusOf = (job: any) => job.nodes.reduce((n: number, node: any) => n + node.gpus.length, 0);

describe('a job’s counts in one answer', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer({ fleet: { projects: 1, jobsPerProject: 4, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 2 } });
  }, 120_000);
  afterAll(async () => {
    await s.close();
  });

  it('gpuCount before nodes in the selection: the count the nodes report, on a cold cache', async () => {
    const res = await s.gql('{ jobs(first: 10) { edges { node { id status gpuCount nodes { id gpus { id } } } } } }');
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const jobs = res.data.jobs.edges.map((e: any) => e.node).filter((j: any) => j.nodes.length > 0);
    expect(jobs.some((j: any) => j.status === 'RUNNING')).toBe(true);
    for (const job of jobs) {
      expect(gpusOf(job)).toBe(4);
      expect(job.gpuCount, job.id).toBe(gpusOf(job));
    }
  });

  it('gpuCount after gpus, through Query.job and Query.node, on a warm cache too', async () => {
    const list = await s.gql('{ jobs(first: 10) { edges { node { id } } } }');
    for (const { node } of list.data.jobs.edges) {
      const res = await s.gql('query($id: ID!) { job(id: $id) { gpus { id } gpuCount } node(id: $id) { ... on Job { nodes { gpus { id } } gpuCount } } }', {
        id: node.id,
      });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      if (res.data.job.gpus.length === 0) continue;
      expect(res.data.job.gpuCount).toBe(res.data.job.gpus.length);
      expect(res.data.node.gpuCount).toBe(gpusOf(res.data.node));
    }
  });
});
