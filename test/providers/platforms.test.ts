// Each platform module's shape, and what is read off the list of modules: a module with a part out
// of range, or a derivation that drops a kind, fails here rather than at run time.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectConfig, parseProvidersFile, providerConfig } from '../../src/config/index.js';
import { DEFAULT_CALLS_PER_MINUTE, DEFAULT_RETENTION_DAYS } from '../../src/collect/index.js';
import { JOB_STATUSES } from '../../src/domain/types.js';
import { DEFAULT_POLL_SECONDS } from '../../src/live/intervals.js';
import { PLATFORMS, PROVIDER_KIND_DOCS, PROVIDER_KINDS } from '../../src/providers/platforms.js';
import { createAdapter } from '../../src/providers/registry.js';
import { SIMULATORS } from '../../src/simulators/platforms.js';

const SDL = readFileSync(path.resolve(import.meta.dirname, '../../schema/schema.graphql'), 'utf8');

describe('platform modules', () => {
  it.each(PLATFORMS.map((p) => [p.kind, p] as const))('%s has every part, each in range', (kind, p) => {
    expect(kind).toMatch(/^[A-Z][A-Z0-9_]*$/);
    expect(p.description.trim().length).toBeGreaterThan(10);
    // Its schema is an entry of its own kind: the union picks it by that literal.
    expect(p.configSchema.shape.kind.value).toBe(kind);
    expect(p.configSchema.safeParse({ id: 'x', kind: 'SOMETHING_ELSE' }).success).toBe(false);
    expect(typeof p.createAdapter).toBe('function');
    // The same bounds a provider's own settings must keep (config/provider-kit.ts).
    expect(p.defaultPollSeconds).toBeGreaterThan(0);
    expect(p.defaultPollSeconds).toBeLessThanOrEqual(3600);
    expect(collectConfig.safeParse({ callsPerMinute: p.collect.callsPerMinute, retentionDays: p.collect.retentionDays }).success).toBe(true);
    // Statuses map onto the common scale; UNKNOWN is what an unlisted status gets, never a row.
    const targets = Object.values(p.statuses.table);
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) expect(JOB_STATUSES.filter((s) => s !== 'UNKNOWN')).toContain(t);
  });

  it('lists each kind once', () => {
    expect(new Set(PROVIDER_KINDS).size).toBe(PLATFORMS.length);
  });
});

describe('what is read off the list', () => {
  it('gives every kind a poll interval, collector defaults and a contract description', () => {
    for (const p of PLATFORMS) {
      expect(DEFAULT_POLL_SECONDS[p.kind]).toBe(p.defaultPollSeconds);
      expect(DEFAULT_CALLS_PER_MINUTE[p.kind]).toBe(p.collect.callsPerMinute);
      expect(DEFAULT_RETENTION_DAYS[p.kind]).toBe(p.collect.retentionDays);
      expect(PROVIDER_KIND_DOCS[p.kind].description).toBe(p.description);
    }
    expect(Object.keys(DEFAULT_POLL_SECONDS)).toEqual([...PROVIDER_KINDS]);
  });

  it('prints the ProviderKind enum of the contract from the modules, in their order', () => {
    const block = /enum ProviderKind \{([\s\S]*?)\n\}/.exec(SDL)![1]!;
    const values = [...block.matchAll(/^ {2}([A-Z][A-Z0-9_]*)$/gm)].map((m) => m[1]);
    expect(values).toEqual([...PROVIDER_KINDS]);
    for (const p of PLATFORMS) expect(block).toContain(p.description);
  });

  it("accepts each kind's entry by its own schema and refuses a kind no module lists", () => {
    expect(providerConfig.options.map((o) => o.shape.kind.value)).toEqual([...PROVIDER_KINDS]);
    expect(() => parseProvidersFile('providers:\n  - { id: toy, kind: TOY }\n', 'p.yaml')).toThrow(/kind/);
  });

  it('builds the adapter of each kind through its module', () => {
    const adapter = createAdapter({ id: 'rc', kind: 'RUNICORN', storageDir: '/nonexistent' }, {});
    expect(adapter.kind).toBe('RUNICORN');
    expect(adapter.id).toBe('rc');
  });

  it('has a simulator only for listed kinds, each once', () => {
    const kinds = SIMULATORS.map((s) => s.kind);
    expect(new Set(kinds).size).toBe(kinds.length);
    for (const k of kinds) expect(PROVIDER_KINDS).toContain(k);
  });
});
