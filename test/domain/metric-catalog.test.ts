// The metric catalog is the one place a platform's raw metric names live (issue 18): adapters ask
// it for their names, and no adapter file outside wire.ts (the platform's body shapes) spells one.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { METRIC_CATALOG, canonicalMetricFor, rawName } from '../../src/domain/metric-catalog.js';
import { SYSTEM_METRICS } from '../../src/domain/types.js';

const PROVIDERS_DIR = path.resolve(import.meta.dirname, '../../src/providers');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/** Every string literal of a file (quotes, backticks without substitutions), comments left out. */
function stringLiterals(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  return [...code.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\$]|\\.)*)`/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

describe('metric catalog', () => {
  it('defines every system metric once, with a unit and at least one platform name', () => {
    expect([...METRIC_CATALOG.keys()].sort()).toEqual([...SYSTEM_METRICS].sort());
    for (const def of METRIC_CATALOG.values()) {
      expect(def.unit).toBeTruthy();
      expect(Object.values(def.raw).flat().length).toBeGreaterThan(0);
    }
  });

  it('names each platform route once per metric, and answers raw name <-> metric both ways', () => {
    for (const def of METRIC_CATALOG.values()) {
      for (const [kind, names] of Object.entries(def.raw)) {
        const routes = names.map((n) => n.route ?? '');
        expect(new Set(routes).size, `${def.name} ${kind}: a route named twice`).toBe(routes.length);
        if (names.length > 1) expect(routes.every(Boolean), `${def.name} ${kind}: several names need routes`).toBe(true);
        for (const n of names) {
          expect(rawName(def.name, kind as never, names.length > 1 ? n.route : undefined)).toBe(n.name);
          expect(canonicalMetricFor(kind as never, n.name, n.route)).not.toBeNull();
        }
      }
    }
    expect(rawName('GPU_UTILIZATION', 'PAI_DLC', 'CloudMonitor job')).toBe('JOB_GPU_ACCELERATOR_DUTTY_UTIL');
    expect(rawName('GPU_DRAM_ACTIVE', 'PAI_DLC', 'CloudMonitor card')).toBe('CARD_GPU_DRAM_ACTIVE_UTIL');
    expect(canonicalMetricFor('MODELARTS', 'gpuUtil')).toBe('GPU_UTILIZATION');
    expect(canonicalMetricFor('MODELARTS', 'no such metric')).toBeNull();
  });

  it('refuses a name it does not have, and an ambiguous ask without a route', () => {
    expect(() => rawName('NPU_UTILIZATION', 'BASETEN')).toThrow(/no BASETEN name for NPU_UTILIZATION/);
    expect(() => rawName('GPU_UTILIZATION', 'PAI_DLC')).toThrow(/no PAI_DLC name/);
    expect(() => rawName('GPU_UTILIZATION', 'PAI_DLC', 'no such route')).toThrow(/route "no such route"/);
  });

  it('is the only place an adapter finds a raw metric name (wire.ts, the body shapes, aside)', () => {
    const rawNames = new Set([...METRIC_CATALOG.values()].flatMap((d) => Object.values(d.raw).flatMap((ns) => ns.map((n) => n.name))));
    const offenders: string[] = [];
    const files = sourceFiles(PROVIDERS_DIR).filter((f) => path.basename(f) !== 'wire.ts');
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      for (const literal of stringLiterals(readFileSync(file, 'utf8'))) {
        if (rawNames.has(literal)) offenders.push(`${path.relative(PROVIDERS_DIR, file)}: '${literal}'`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
