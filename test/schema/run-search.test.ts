// Run metadata, search and ordering on the demo across all five platforms: what each platform
// says of a run (owner, labels, config, image, command, summary) in one vocabulary, filters on
// labels and on summary values, and an ordering on a summary metric paged with stable cursors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { parseDuration } from '../../src/schema/duration.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type GqlResult, graphqlData, postGraphql, startRuntimeOn } from '../support/runtime.js';

interface JobMeta {
  id: string;
  name: string;
  provider: { kind: string };
  owner: string | null;
  labels: { id: string; key: string; value: string | null }[];
  config: Record<string, any> | null;
  image: string | null;
  command: string | null;
  queuedFor: string | null;
  ranFor: string | null;
}

const META = `{ jobs(first: 500) { totalCount edges { node { id name provider { kind } owner labels { id key value } config image command queuedFor ranFor } } } }`;

describe('run metadata and search (demo, five platforms)', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let jobs: JobMeta[];
  const gql = async (query: string, variables?: Record<string, unknown>): Promise<GqlResult> => postGraphql(rt.url, query, variables);
  const ok = graphqlData(() => rt.url);

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, null);
    jobs = (await ok(META)).jobs.edges.map((e: { node: JobMeta }) => e.node);
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  const of = (kind: string) => jobs.filter((j) => j.provider.kind === kind);

  it('says per platform who launched a run, with what, and its labels', () => {
    for (const kind of ['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN']) expect(of(kind).length).toBeGreaterThan(0);
    // Baseten: the creator's e-mail where the job has a user.
    expect(of('BASETEN').some((j) => j.owner?.includes('@'))).toBe(true);
    // ModelArts: user_name, annotations as labels, hyperparameters and environment, the engine image.
    for (const j of of('MODELARTS')) {
      expect(['alice', 'bob']).toContain(j.owner);
      expect(j.labels).toContainEqual(expect.objectContaining({ key: 'job_template', value: 'Template DL' }));
      expect(j.config).toEqual({ parameters: { learning_rate: '0.001', epochs: '10' }, environments: { NCCL_DEBUG: 'INFO' } });
      expect(j.image).toMatch(/^swr\./);
      expect(j.command).toMatch(/train\.py$/);
    }
    // PAI-DLC: Username, the roles' image, UserCommand, Envs.
    for (const j of of('PAI_DLC')) {
      expect(['alice', 'bob']).toContain(j.owner);
      expect(j.image).toContain('pytorch-training');
      expect(j.command).toContain('train.py');
      expect(j.config).toEqual({ envs: { NCCL_DEBUG: 'INFO', PYTHONUNBUFFERED: '1' } });
    }
    // Runicorn: tags are labels without values; no owner (a host is not a person).
    const baseline = of('RUNICORN').find((j) => j.name === 'baseline')!;
    expect(baseline.labels.map((l) => [l.key, l.value])).toEqual([['baseline', null]]);
    expect(of('RUNICORN').every((j) => j.owner === null)).toBe(true);
    // Primus-Lens: none of these exist in its API.
    expect(of('PRIMUS_LENS').every((j) => j.owner === null && j.labels.length === 0 && j.config === null)).toBe(true);
    // Label ids are derived from the job's and the key's, and differ between labels.
    const ids = jobs.flatMap((j) => j.labels.map((l) => l.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives queue and run time as durations', () => {
    const ran = jobs.filter((j) => j.ranFor !== null);
    expect(ran.length).toBeGreaterThan(0);
    for (const j of ran) expect(j.ranFor).toMatch(/^P/);
  });

  it('filters on labels (a key, or a key and value) and on owners', async () => {
    const byTag = await ok(`{ jobs(filter: { labels: [{ key: "baseline" }] }) { edges { node { name provider { kind } } } } }`);
    expect(byTag.jobs.edges.map((e: any) => [e.node.provider.kind, e.node.name])).toEqual([['RUNICORN', 'baseline']]);
    const byValue = await ok(`{ jobs(first: 500, filter: { labels: [{ key: "job_template", value: "Template DL" }] }) { totalCount } }`);
    expect(byValue.jobs.totalCount).toBe(of('MODELARTS').length);
    const wrongValue = await ok(`{ jobs(filter: { labels: [{ key: "job_template", value: "other" }] }) { totalCount } }`);
    expect(wrongValue.jobs.totalCount).toBe(0);
    // An owner as people type it: a name finds the addresses whose local part it is (Baseten's
    // alice@example.com beside PAI-DLC's and ModelArts' bob), in any case.
    const localOf = (o: string | null) => o?.toLowerCase().split('@')[0];
    for (const typed of ['bob', 'Alice']) {
      const found = await ok(`{ jobs(first: 500, filter: { owners: ["${typed}"] }) { totalCount edges { node { owner provider { kind } } } } }`);
      expect(found.jobs.totalCount).toBe(jobs.filter((j) => localOf(j.owner) === typed.toLowerCase()).length);
      expect(found.jobs.totalCount).toBeGreaterThan(0);
    }
    const addressed = jobs.find((j) => j.owner?.includes('@'))!;
    const byLocal = await ok(`{ jobs(first: 500, filter: { owners: ["${addressed.owner!.split('@')[0]}"] }) { edges { node { id } } } }`);
    expect(byLocal.jobs.edges.map((e: any) => e.node.id)).toContain(addressed.id);
  });

  it('summarizes training metrics and searches and orders on them, paging with stable cursors', async () => {
    // Reading the summaries reads the training metrics through the cache (Lens and Runicorn).
    const read = await ok(
      `{ jobs(first: 500, filter: { kinds: [PRIMUS_LENS, RUNICORN] }) { edges { node { id name summary { id name stage latestValue latestStep bestValue bestStep mode bestReportedByPlatform } } } } }`,
    );
    const summaries = new Map<string, any[]>(read.jobs.edges.map((e: any) => [e.node.id, e.node.summary ?? []]));
    const loss = new Map<string, number>();
    for (const [id, list] of summaries) {
      const l = list.find((s) => s.name === 'loss');
      if (l && l.latestValue !== null) loss.set(id, l.latestValue);
    }
    // Loss is lower-is-better on both platforms; a run on each has one.
    const lossJobs = [...loss.keys()];
    expect(lossJobs.some((id) => id.startsWith('primus-lens'))).toBe(true);
    expect(lossJobs.some((id) => id.startsWith('runicorn'))).toBe(true);
    for (const list of summaries.values()) for (const s of list.filter((x) => x.name === 'loss')) expect(s.mode).toBe('MIN');
    // Runicorn's reported best is kept as reported (summary.json: 0.6 at step 400, mode max).
    const baselineId = jobs.find((j) => j.name === 'baseline' && j.provider.kind === 'RUNICORN')!.id;
    const valAcc = summaries.get(baselineId)!.find((s) => s.name === 'val_acc');
    expect(valAcc).toMatchObject({ bestValue: 0.6, bestStep: 400, mode: 'MAX', bestReportedByPlatform: true });

    // A condition on a summary value selects exactly the runs whose summary meets it.
    const values = [...loss.values()].sort((a, b) => a - b);
    const cut = values[Math.floor(values.length / 2)]!;
    const below = await ok(`query($cut: Float!) { jobs(first: 500, filter: { summary: [{ metric: "loss", lt: $cut }] }) { edges { node { id } } } }`, {
      cut,
    });
    const expected = [...loss].filter(([, v]) => v < cut).map(([id]) => id);
    expect(below.jobs.edges.map((e: any) => e.node.id).sort()).toEqual(expected.sort());
    expect(expected.length).toBeGreaterThan(0);
    const best = await ok(`{ jobs(filter: { summary: [{ metric: "val_acc", value: BEST, gte: 0.6 }] }) { edges { node { id } } } }`);
    expect(best.jobs.edges.map((e: any) => e.node.id)).toContain(baselineId);

    // Ordered by latest loss, ascending, two per page: every job once, in loss order, the jobs
    // without a loss last (by id); the same order going backward from the end.
    const PAGE = `query($after: String, $before: String, $first: Int, $last: Int) {
      jobs(first: $first, after: $after, last: $last, before: $before, orderBy: { field: SUMMARY, direction: ASC, summary: { metric: "loss" } }) {
        totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id } } } }`;
    const forward: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = (await ok(PAGE, { first: 2, after })).jobs;
      forward.push(...page.edges.map((e: any) => e.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(forward.length).toBe(jobs.length);
    expect(new Set(forward).size).toBe(jobs.length);
    const withLoss = forward.filter((id) => loss.has(id));
    expect(forward.slice(0, withLoss.length)).toEqual(withLoss);
    expect(withLoss.map((id) => loss.get(id)!)).toEqual([...withLoss.map((id) => loss.get(id)!)].sort((a, b) => a - b));
    const backward: string[] = [];
    let before: string | null = null;
    for (;;) {
      const page: any = (await ok(PAGE, { last: 3, before })).jobs;
      backward.unshift(...page.edges.map((e: any) => e.node.id));
      if (!page.pageInfo.hasPreviousPage) break;
      before = page.pageInfo.startCursor;
    }
    expect(backward).toEqual(forward);
  }, 120_000);

  it('orders by name, accelerator count and duration, each page continuing the same order', async () => {
    for (const field of ['NAME', 'ACCELERATOR_COUNT', 'DURATION', 'STARTED']) {
      const q = `query($after: String) { jobs(first: 7, after: $after, orderBy: { field: ${field}, direction: DESC }) {
        pageInfo { hasNextPage endCursor } edges { node { id name gpuCount ranFor startedAt } } } }`;
      const seen: any[] = [];
      let after: string | null = null;
      for (;;) {
        const page: any = (await ok(q, { after })).jobs;
        seen.push(...page.edges.map((e: any) => e.node));
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      expect(new Set(seen.map((j) => j.id)).size, field).toBe(jobs.length);
      if (field === 'NAME') {
        const names = seen.map((j) => j.name as string);
        expect(names).toEqual([...names].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0)));
      }
      if (field === 'ACCELERATOR_COUNT') {
        const counts = seen.map((j) => j.gpuCount as number | null);
        const known = counts.filter((c) => c !== null) as number[];
        expect(counts.slice(0, known.length)).toEqual([...known].sort((a, b) => b - a));
      }
      if (field === 'DURATION') {
        // Jobs with no known run time (not started, or ended with no finish time) come last.
        const ran = seen.map((j) => (j.ranFor === null ? null : parseDuration(j.ranFor)));
        const known = ran.filter((r) => r !== null) as number[];
        expect(
          ran.slice(known.length).every((r) => r === null),
          'unknown durations last',
        ).toBe(true);
        expect(known).toEqual([...known].sort((a, b) => b - a));
      }
    }
  }, 120_000);

  it('refuses what it cannot answer, with a code', async () => {
    const codes = async (query: string) => (await gql(query)).errors?.map((e) => [e.extensions?.code, e.extensions?.argument]);
    expect(await codes(`{ jobs(orderBy: { field: SUMMARY }) { totalCount } }`)).toEqual([['BAD_INPUT', 'orderBy.summary']]);
    expect(await codes(`{ jobs(filter: { summary: [{ metric: "loss" }] }) { totalCount } }`)).toEqual([['BAD_INPUT', 'filter.summary']]);
    const byName = await ok(`{ jobs(first: 1, orderBy: { field: NAME }) { pageInfo { endCursor } } }`);
    const mixed = await gql(`query($c: String) { jobs(first: 1, after: $c) { totalCount } }`, { c: byName.jobs.pageInfo.endCursor });
    expect(mixed.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_INPUT', argument: 'after' });
    expect(mixed.errors?.[0]?.message).toContain('another ordering');
    const tooMany = JSON.stringify(Array.from({ length: 21 }, (_, i) => `o${i}`));
    expect(await codes(`{ jobs(filter: { owners: ${tooMany} }) { totalCount } }`)).toEqual([['BAD_INPUT', 'filter.owners']]);
  });
});
