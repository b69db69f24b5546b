// `npm run doctor` (issue 38): one read-only call per route per platform, against the embedded
// demo's five simulated platforms (every route OK), then against each fault a real account can meet
// (bad key, wrong region, forbidden, shape drift, empty metrics, 429): the route and the reason
// named, exit code 1, and no secret in the output.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import { formatReport, runDoctor } from '../../src/doctor/run.js';
import { type DemoProvider, startDemoProviders } from '../../src/simulators/demo.js';

let demo: DemoProvider[];
const byKind = (kind: string) => demo.find((d) => d.config.kind === kind)!;
const secretsOf = () => demo.flatMap((d) => Object.values(d.secrets).filter((v): v is string => typeof v === 'string'));

async function fault(kind: string, body: Record<string, unknown>) {
  const url = `${(byKind(kind).config as { baseUrl: string }).baseUrl}/__sim/faults`;
  await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}
async function clearFaults() {
  await Promise.all(
    demo.filter((d) => 'baseUrl' in d.config).map((d) => fetch(`${(d.config as { baseUrl: string }).baseUrl}/__sim/faults`, { method: 'DELETE' })),
  );
}
async function doctor(configs: ProviderConfig[], env: Record<string, string>) {
  const { reports, exitCode } = await runDoctor(configs, env);
  const text = formatReport(reports);
  for (const secret of [...secretsOf(), ...Object.values(env)]) if (secret.length >= 6) expect(text).not.toContain(secret);
  return { reports, exitCode, text };
}
const one = (kind: string, over: Record<string, unknown> = {}) => [{ ...byKind(kind).config, ...over } as ProviderConfig];

beforeAll(async () => {
  demo = await startDemoProviders({});
}, 120_000);
afterAll(async () => {
  await Promise.all((demo ?? []).map((d) => d.close()));
});

describe('npm run doctor', () => {
  it('refuses a bad setting as the server does: the setting named, exit code 2, no stack', () => {
    const { PROVIDERS_CONFIG: _p, ...env } = process.env;
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/doctor/main.ts'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...env, V8_HEAP_GROWING_PERCENT: 'fast' },
      encoding: 'utf8',
      timeout: 110_000,
    });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/^configuration error:\nenvironment\.V8_HEAP_GROWING_PERCENT: /);
    expect(run.stderr).not.toMatch(/\bat /);
  }, 120_000);

  it("with no configuration: the demo's five platforms, every route OK, each named", async () => {
    const { reports, exitCode, text } = await doctor(
      demo.map((d) => d.config),
      Object.assign({}, ...demo.map((d) => d.secrets)),
    );
    expect(exitCode, text).toBe(0);
    expect(new Set(reports.map((r) => r.kind))).toEqual(new Set(['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN']));
    for (const kind of ['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS']) {
      const metrics = reports.find((r) => r.kind === kind && r.route === 'metrics')!;
      expect(metrics.points, kind).toBeGreaterThan(0);
      expect(metrics.clockSkewSeconds, kind).not.toBeNull();
    }
    expect(text.split('\n')).toHaveLength(20);
  }, 120_000);

  const cases: {
    what: string;
    kind: string;
    setup: () => Promise<{ configs: ProviderConfig[]; env: Record<string, string> }>;
    route: string;
    reason: RegExp;
  }[] = [
    {
      what: 'bad key',
      kind: 'BASETEN',
      setup: async () => ({
        configs: one('BASETEN'),
        env: { ...byKind('BASETEN').secrets, [Object.keys(byKind('BASETEN').secrets)[0]!]: 'wrong-key-0123456789' } as Record<string, string>,
      }),
      route: 'jobs',
      reason: /not authenticated/,
    },
    {
      what: 'wrong region (a project id of another region)',
      kind: 'MODELARTS',
      setup: async () => ({
        configs: one('MODELARTS', { projectId: 'f00dfeedf00dfeedf00dfeedf00dfeed' }),
        env: byKind('MODELARTS').secrets as Record<string, string>,
      }),
      route: 'jobs',
      reason: /not permitted \(HTTP 403\)|not authenticated/,
    },
    {
      what: 'forbidden',
      kind: 'BASETEN',
      setup: async () => {
        await fault('BASETEN', { kind: 'status', status: 403 });
        return { configs: one('BASETEN'), env: byKind('BASETEN').secrets as Record<string, string> };
      },
      route: 'jobs',
      reason: /not permitted \(HTTP 403\)/,
    },
    {
      what: 'shape drift',
      kind: 'PAI_DLC',
      setup: async () => {
        await fault('PAI_DLC', { kind: 'malformed', route: 'listJobs' });
        return { configs: one('PAI_DLC'), env: byKind('PAI_DLC').secrets as Record<string, string> };
      },
      route: 'jobs',
      reason: /unexpected answer/,
    },
    {
      what: 'empty metrics',
      kind: 'PAI_DLC',
      setup: async () => {
        await fault('PAI_DLC', { kind: 'empty', route: '^(getJobMetrics|getMetrics)$' });
        return { configs: one('PAI_DLC'), env: byKind('PAI_DLC').secrets as Record<string, string> };
      },
      route: 'metrics',
      reason: /no metric points came back/,
    },
    {
      what: '429',
      kind: 'PAI_DLC',
      setup: async () => {
        await fault('PAI_DLC', { kind: 'rate_limit', route: 'listJobs', retryAfterSeconds: 2 });
        return { configs: one('PAI_DLC'), env: byKind('PAI_DLC').secrets as Record<string, string> };
      },
      route: 'jobs',
      reason: /rate limited/,
    },
  ];

  for (const c of cases) {
    it(`${c.what}: the route and the reason named, exit code 1, no secret printed`, async () => {
      try {
        const { configs, env } = await c.setup();
        const { reports, exitCode, text } = await doctor(configs, env);
        expect(exitCode, text).toBe(1);
        const failed = reports.find((r) => !r.ok)!;
        expect(failed, text).toBeDefined();
        expect(failed.route, text).toBe(c.route);
        expect(failed.reason, text).toMatch(c.reason);
        expect(text).toMatch(new RegExp(`FAIL ${configs[0]!.id} \\(${c.kind}\\) ${c.route}:`));
      } finally {
        await clearFaults();
      }
    }, 60_000);
  }
});
