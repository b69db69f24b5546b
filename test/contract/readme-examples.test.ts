// The README's example queries run as written against the embedded demo (all five simulators).
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRuntime, type Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
const examples = [...readme.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('README examples against the demo', () => {
  let rt: Runtime;
  let db: TestDatabase;
  const workDir = mkdtempSync(path.join(tmpdir(), 'tg-readme-'));
  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startRuntime({
      config: { port: 0, host: '127.0.0.1', databaseUrl: db.databaseUrl, dataDir: db.dataDir, redisUrl: null, logLevel: 'silent', providers: null },
      logger: pino({ level: 'silent' }),
      demoWorkDir: workDir,
    });
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
