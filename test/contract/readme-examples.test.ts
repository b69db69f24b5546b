// The README's example queries run as written against the embedded demo (all five simulators),
// every GraphQL block of the README and docs/, fenced or indented, is valid against the schema, and
// the docs' operations, ```promql blocks and curl commands run on the demo too.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GraphQLObjectType, type DocumentNode, Kind, parse, validate } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { allCurlCommands, allDocBlocks, allPromqlBlocks, docFiles, graphqlBlocks, parseCurl } from './doc-blocks.js';

const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
const examples = [...readme.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** What is wrong with a block: an operation that does not validate, or another subgraph's SDL keyed on a type or field we do not have. */
function problems(source: string): string[] {
  let doc: DocumentNode;
  try {
    doc = parse(source);
  } catch (e) {
    return [(e as Error).message];
  }
  const executable = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION);
  if (executable.length === doc.definitions.length) return validate(schema, doc).map((e) => e.message);
  if (executable.length > 0) return ['mixes operations and type definitions'];
  // Type definitions: another subgraph's view of our entities (federation); its keys must be ours.
  const out: string[] = [];
  for (const d of doc.definitions) {
    if (!('name' in d) || !d.name || !('directives' in d)) continue;
    for (const dir of d.directives ?? []) {
      if (dir.name.value !== 'key') continue;
      const ours = schema.getType(d.name.value);
      if (!(ours instanceof GraphQLObjectType)) {
        out.push(`@key on ${d.name.value}, which the schema does not have`);
        continue;
      }
      const arg = dir.arguments?.find((a) => a.name.value === 'fields');
      const fields = arg?.value.kind === Kind.STRING ? arg.value.value.split(/\s+/).filter(Boolean) : [];
      for (const f of fields) if (!ours.getFields()[f]) out.push(`@key field ${d.name.value}.${f} is not in the schema`);
    }
  }
  return out;
}

describe('GraphQL blocks of the README and docs', () => {
  const blocks = allDocBlocks();

  it('finds the fenced and the indented ones', () => {
    expect(docFiles()).toContain('README.md');
    const readmeBlocks = blocks.filter((b) => b.where.startsWith('README.md:'));
    // The README's five fenced examples; the indented ones (fleet, run search, compare) are in
    // docs/fleet-and-runs.md. The teams subgraph's SDL is in docs/federation.md.
    expect(readmeBlocks.length).toBe(5);
    expect(blocks.filter((b) => b.where.startsWith('docs/fleet-and-runs.md:')).length).toBeGreaterThanOrEqual(3);
    expect(blocks.some((b) => b.where.startsWith('docs/fleet-and-runs.md:') && b.source.startsWith('{ fleet('))).toBe(true);
    expect(blocks.some((b) => b.where.startsWith('docs/federation.md:') && b.source.includes('@key'))).toBe(true);
  });

  it.each(blocks.map((b) => [b.where, b.source] as const))('%s is valid against the schema', (_where, source) => {
    expect(problems(source)).toEqual([]);
  });

  it('a block asking for a field the schema does not have fails, fenced or indented', () => {
    const md = [
      'Text.',
      '',
      '    { fleet(from: "2026-11-20T08:00:00Z", to: "2026-11-20T12:00:00Z") {',
      '        utilization { byGpuModel { model } } } }',
      '',
      '```graphql',
      '{ projects { nme } }',
      '```',
      '',
    ].join('\n');
    const found = graphqlBlocks(md, 'x.md');
    expect(found.map((b) => b.where)).toEqual(['x.md:3', 'x.md:6']);
    expect(problems(found[0]!.source).join('\n')).toMatch(/Cannot query field "model" on type "GpuHours"/);
    expect(problems(found[1]!.source).join('\n')).toMatch(/Cannot query field "nme"/);
    expect(problems('type Job @key(fields: "uuid") { uuid: ID! }')).toEqual(['@key field Job.uuid is not in the schema']);
  });
});

describe('README examples against the demo', () => {
  let rt: Runtime;
  let db: TestDatabase;
  const workDir = mkdtempSync(path.join(tmpdir(), 'tg-readme-'));
  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, null, { demoWorkDir: workDir });
  });
  afterAll(async () => {
    await rt.close();
    await db.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('has five examples', () => expect(examples).toHaveLength(5));

  async function run(query: string) {
    const res = await rt.app.fetch('http://yoga/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    return (await res.json()) as { data?: any; errors?: unknown[] };
  }

  it('lists Baseten projects -> jobs -> nodes -> gpus -> utilization in RATIO 0..1', async () => {
    const res = await run(examples[0]!);
    expect(res.errors).toBeUndefined();
    const gpus = res.data.projects.flatMap((p: any) => p.jobs.edges.flatMap((e: any) => e.node.nodes.flatMap((n: any) => n.gpus)));
    const withData = gpus.filter((g: any) => g.utilization?.points.length);
    expect(withData.length).toBeGreaterThan(0);
    for (const g of withData) {
      expect(g.utilization.unit).toBe('RATIO');
      for (const p of g.utilization.points) expect(p.value === null || (p.value >= 0 && p.value <= 1)).toBe(true);
    }
  });

  it('answers running jobs of every platform side by side', async () => {
    const res = await run(examples[1]!);
    expect(res.errors).toBeUndefined();
    const kinds = new Set(res.data.jobs.edges.map((e: any) => e.node.provider.kind));
    for (const k of ['BASETEN', 'MODELARTS', 'PAI_DLC']) expect(kinds).toContain(k);
    for (const e of res.data.jobs.edges) {
      for (const m of e.node.metrics) expect(m.unit).toBe('RATIO');
    }
  });

  it('answers training metrics and progress for Lens and Runicorn', async () => {
    const res = await run(examples[2]!);
    expect(res.errors).toBeUndefined();
    const kinds = new Set(res.data.jobs.edges.map((e: any) => e.node.provider.kind));
    expect(kinds).toEqual(new Set(['PRIMUS_LENS', 'RUNICORN']));
    // Issue 4: a loss series by step from each platform side by side, with progress and an ETA.
    for (const kind of ['PRIMUS_LENS', 'RUNICORN']) {
      const jobs = res.data.jobs.edges.map((e: any) => e.node).filter((n: any) => n.provider.kind === kind);
      const shown = jobs.find((n: any) => n.progress?.eta && n.trainingMetrics.some((s: any) => s.name === 'loss' && s.points.length > 1));
      expect(shown, `${kind}: a running job with a loss series and an ETA`).toBeDefined();
      const loss = shown.trainingMetrics.find((s: any) => s.name === 'loss');
      const steps = loss.points.map((p: any) => p.step);
      expect(steps).toEqual([...steps].sort((a: number, b: number) => a - b));
      expect(shown.progress.fraction).toBeGreaterThan(0);
      expect(shown.progress.fraction).toBeLessThanOrEqual(1);
    }
  });
  it('shows every platform with its health and its collector', async () => {
    const res = await run(examples[3]!);
    expect(res.errors).toBeUndefined();
    expect(new Set(res.data.providers.map((p: any) => p.kind))).toEqual(new Set(['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN']));
    for (const p of res.data.providers) {
      expect(p.simulated).toBe(true);
      expect(p.health.state).toBeTypeOf('string');
      expect(p.collection === null || typeof p.collection.enabled === 'boolean').toBe(true);
    }
  });

  it('lists runs of every platform, longest first, with their metadata', async () => {
    const res = await run(examples[4]!);
    expect(res.errors).toBeUndefined();
    const jobs = res.data.jobs.edges.map((e: any) => e.node);
    expect(jobs).toHaveLength(10);
    expect(res.data.jobs.totalCount).toBeGreaterThan(10);
    // ranFor is an ISO-8601 duration; longest first, jobs without one last.
    const seconds = (d: string | null) => {
      if (d === null) return -1;
      const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?)?$/.exec(d);
      expect(m, d).not.toBeNull();
      return Number(m![1] ?? 0) * 86400 + Number(m![2] ?? 0) * 3600 + Number(m![3] ?? 0) * 60 + Number(m![4] ?? 0);
    };
    // Longest first; a job with no known run time (not started, or ended with no finish time) last.
    const all = jobs.map((j: any) => seconds(j.ranFor));
    const ran = all.filter((s: number) => s >= 0);
    expect(all.slice(ran.length).every((s: number) => s < 0)).toBe(true);
    expect(ran.length).toBeGreaterThan(1);
    expect(ran).toEqual([...ran].sort((a: number, b: number) => b - a));
    for (const j of jobs) expect(Array.isArray(j.labels) && Array.isArray(j.summary)).toBe(true);
  });

  it.each(allPromqlBlocks().map((b) => [b.where, b.source] as const))('the PromQL of %s runs on the query API', async (_where, expr) => {
    // After the examples above, the cache holds the running jobs' accelerator series.
    const res = await fetch(`${rt.url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
    const body = (await res.json()) as { status: string; data?: { resultType: string; result: unknown[] }; error?: string };
    expect(body.error).toBeUndefined();
    expect(res.status).toBe(200);
    expect(body.status).toBe('success');
    expect(body.data!.resultType).toBe('vector');
  });

  it("finds the docs' PromQL blocks", () => expect(allPromqlBlocks().length).toBeGreaterThanOrEqual(1));

  it.each(allCurlCommands().map((b) => [b.where, b.source] as const))('the curl command of %s answers 200 on the demo', async (_where, command) => {
    const { url, headers } = parseCurl(command);
    // `<runicorn job id>` and the like: a running job of that platform, found through the graph.
    let path = `${url.pathname}${url.search}`;
    for (const m of [...path.matchAll(/%3C([a-z-]+)%20job%20id%3E|<([a-z-]+) job id>/g)]) {
      const kind = (m[1] ?? m[2]!).toUpperCase().replace('-', '_');
      const res = await run(`{ jobs(first: 1, filter: { kinds: [${kind}], statuses: [RUNNING] }) { edges { node { id } } } }`);
      const id = res.data.jobs.edges[0]?.node.id;
      expect(id, `a running ${kind} job`).toBeDefined();
      path = path.replace(m[0], encodeURIComponent(id));
    }
    expect(url.origin).toBe('http://127.0.0.1:4000');
    const res = await fetch(`${rt.url}${path}`, { headers });
    const body = await res.text();
    expect(res.status, body.slice(0, 300)).toBe(200);
    // Something beyond comment lines: the export's rows, the scrape's samples, the query's result.
    expect(body.split('\n').some((l) => l.trim() !== '' && !l.startsWith('#'))).toBe(true);
  });

  // The docs' operations (README's are run above, each with its own checks) run as written too;
  // a required variable gets a value from here, and one without a value here fails by name.
  const docOperations = allDocBlocks().filter(
    (b) => !b.where.startsWith('README.md:') && parse(b.source).definitions.every((d) => d.kind === Kind.OPERATION_DEFINITION),
  );
  it.each(docOperations.map((b) => [b.where, b.source] as const))('the operation of %s runs on the demo without errors', async (_where, source) => {
    const required = parse(source).definitions.flatMap((d) =>
      d.kind === Kind.OPERATION_DEFINITION
        ? (d.variableDefinitions ?? []).filter((v) => v.type.kind === Kind.NON_NULL_TYPE).map((v) => v.variable.name.value)
        : [],
    );
    const variables: Record<string, unknown> = {};
    for (const name of required) {
      // docs/findings.md's silence: an hour from now (the demo has no tokens: anyone may write).
      if (name === 'until') {
        variables.until = new Date(Date.now() + 3_600_000).toISOString();
        continue;
      }
      if (name !== 'ids') throw new Error(`no value for the docs' variable $${name}: give readme-examples.test.ts one`);
      // As docs/fleet-and-runs.md shows it: a Runicorn run beside a Primus-Lens workload.
      const res = await run(
        '{ jobs(first: 1, filter: { kinds: [RUNICORN], statuses: [RUNNING] }) { edges { node { id } } } lens: jobs(first: 1, filter: { kinds: [PRIMUS_LENS], statuses: [RUNNING] }) { edges { node { id } } } }',
      );
      variables.ids = [res.data.jobs.edges[0].node.id, res.data.lens.edges[0].node.id];
    }
    const res = await rt.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: source, variables }),
    });
    const body = (await res.json()) as { data?: unknown; errors?: unknown[] };
    expect(body.errors).toBeUndefined();
    expect(body.data).toBeTruthy();
  });

  it("runs the docs' operations: fleet, run search, compare, collection", () => expect(docOperations.length).toBeGreaterThanOrEqual(4));

  it("finds the docs' curl commands, and refuses an option it does not know", () => {
    expect(allCurlCommands().length).toBeGreaterThanOrEqual(4);
    expect(parseCurl("curl -s -G http://h:1/q --data-urlencode 'query=a b'").url.search).toBe('?query=a%20b');
    expect(() => parseCurl('curl -X DELETE http://h:1/')).toThrow(/not understood/);
  });
});
