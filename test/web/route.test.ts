// The live view page's addresses and line styles, without a browser: every route survives a round
// trip through its URL, odd hashes fall back to the fleet, and the first 27 line styles are distinct.
import { describe, expect, it } from 'vitest';
import { formatRoute, parseRoute, type Route } from '../../src/web/route.js';
import { DISTINCT_STYLES, lineStyle, utilizationColour } from '../../src/web/palette.js';
import { providerLabel } from '../../src/web/format.js';

describe('page routes', () => {
  it('round-trips job and fleet routes through the hash', () => {
    const routes: Route[] = [
      { view: 'job', jobId: 'modelarts-demo:job:ce2b266a-c7f1-4984-a01e-c5c1cc1710af' },
      { view: 'job', jobId: 'runicorn-demo:job:demo/mnist 20261122_180000&x=1' },
      { view: 'fleet', provider: null, project: null, sort: 'waste', descending: true },
      { view: 'fleet', provider: 'baseten-demo', project: 'baseten-demo:project:qas98kw', sort: 'utilization', descending: false },
    ];
    for (const r of routes) expect(parseRoute(formatRoute(r))).toEqual(r);
    expect(formatRoute({ view: 'fleet', provider: 'pai-dlc-demo', project: null, sort: 'waste', descending: true })).toBe('#fleet?provider=pai-dlc-demo');
  });

  it('opens the fleet for an empty, unknown or malformed hash', () => {
    for (const hash of ['', '#', '#nothing', '#job=', '#fleet?sort=bogus']) {
      expect(parseRoute(hash)).toEqual({ view: 'fleet', provider: null, project: null, sort: 'waste', descending: true });
    }
  });
});

describe('line styles', () => {
  it('gives 27 series pairwise different colour-and-dash styles, 16 GPUs included', () => {
    expect(DISTINCT_STYLES).toBeGreaterThanOrEqual(24);
    const keys = Array.from({ length: DISTINCT_STYLES }, (_, i) => JSON.stringify(lineStyle(i)));
    expect(new Set(keys).size).toBe(DISTINCT_STYLES);
  });

  it('maps utilization onto a ramp that darkens monotonically', () => {
    const lightness = (hex: string) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16)).reduce((a, b) => a + b, 0);
    const steps = Array.from({ length: 11 }, (_, i) => lightness(utilizationColour(i / 10)));
    for (let i = 1; i < steps.length; i++) expect(steps[i]).toBeLessThanOrEqual(steps[i - 1]!);
    expect(utilizationColour(-1)).toBe(utilizationColour(0));
    expect(utilizationColour(2)).toBe(utilizationColour(1));
  });

  it('says "simulated" once in a provider label', () => {
    expect(providerLabel({ name: 'Baseten (simulated)', simulated: true })).toBe('Baseten (simulated)');
    expect(providerLabel({ name: 'Baseten', simulated: true })).toBe('Baseten (simulated)');
    expect(providerLabel({ name: 'Baseten prod', simulated: false })).toBe('Baseten prod');
  });
});
