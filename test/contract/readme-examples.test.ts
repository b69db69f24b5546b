// The README's example queries run as written against the embedded demo (all five simulators), and
// every GraphQL block of the README and docs/, fenced or indented, is valid against the schema.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GraphQLObjectType, type DocumentNode, Kind, parse, validate } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { allDocBlocks, docFiles, graphqlBlocks } from './doc-blocks.js';

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
    // 3 fenced examples; indented: fleet, run search and compare. The teams subgraph's SDL is in docs/federation.md.
    expect(readmeBlocks.length).toBeGreaterThanOrEqual(6);
    expect(readmeBlocks.some((b) => b.source.startsWith('{ fleet('))).toBe(true);
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

  it('has three examples', () => expect(examples).toHaveLength(3));

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
});
