// A sixth platform added as docs/adding-a-platform.md says: its folder (here) and one line
// (platforms.ts here, PLATFORMS in the build). The list with that line goes through the same
// derivations the build's list does; the build's own list, without the line, knows nothing of it.
// half-registered.types.ts beside this shows the compiler refusing the toy with a part or the line missing.
import { describe, expect, it } from 'vitest';
import { providerConfig } from '../../../src/config/index.js';
import { adapterFactoryOf, configUnionOf, kindDocsOf, valuesByKind } from '../../../src/providers/platform.js';
import { PLATFORMS } from '../../../src/providers/platforms.js';
import { createAdapter } from '../../../src/providers/registry.js';
import { TOY_PLATFORMS } from './platforms.js';

const entry = {
  id: 'toy-box',
  kind: 'TOY',
  jobs: [
    { name: 'spin', status: 'playing' },
    { name: 'stack', status: 'lost' },
  ],
} as const;

describe('a toy sixth platform', () => {
  it('is a kind with its poll interval, collector defaults and contract description once its line is in the list', () => {
    expect(valuesByKind(TOY_PLATFORMS, (p) => p.defaultPollSeconds)).toMatchObject({ TOY: 5, RUNICORN: 2 });
    expect(valuesByKind(TOY_PLATFORMS, (p) => p.collect.callsPerMinute).TOY).toBe(60);
    expect(Object.keys(kindDocsOf(TOY_PLATFORMS))).toEqual([...PLATFORMS.map((p) => p.kind), 'TOY']);
    expect(Object.keys(kindDocsOf(PLATFORMS))).not.toContain('TOY');
  });

  it('has its providers-file entry accepted by the union of the list with its line, and refused by the build', () => {
    const parsed = configUnionOf(TOY_PLATFORMS).parse(entry);
    expect(parsed).toMatchObject({ id: 'toy-box', kind: 'TOY' });
    expect(configUnionOf(TOY_PLATFORMS).safeParse({ ...entry, jobs: [] }).success).toBe(false);
    expect(providerConfig.safeParse(entry).success).toBe(false);
  });

  it('serves its jobs through the adapter registry of the list with its line', async () => {
    const adapter = adapterFactoryOf(TOY_PLATFORMS)(configUnionOf(TOY_PLATFORMS).parse(entry), {});
    const signal = new AbortController().signal;
    const page = await adapter.listJobs(null, signal);
    expect(page.jobs.map((j) => [j.name, j.status, j.rawStatus])).toEqual([
      ['spin', 'RUNNING', 'playing'],
      ['stack', 'UNKNOWN', 'lost'],
    ]);
    expect(await adapter.getJob({ externalId: 'spin', projectExternalId: 'toys' }, signal)).toMatchObject({ name: 'spin', nodes: [] });
    expect(() => createAdapter(entry as never, {})).toThrow('provider "toy-box": kind TOY has no adapter in this build');
  });
});
