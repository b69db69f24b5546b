// Baseten's point arrays are checked in place (no copy per point): the same shapes pass and fail
// as with z.array(z.object({ timestamp: z.string(), value: z.number().nullable() })).
import { describe, expect, it } from 'vitest';
import { metricsResponse } from '../../../src/providers/baseten/wire.js';

const body = (cpu: unknown) => ({ per_node_metrics: [{ node_id: 'n0', metrics: { cpu_usage: cpu } }] });

describe('Baseten metrics wire schema', () => {
  it('accepts points with a timestamp and a number or null, and hands back the same arrays', () => {
    const points = [
      { timestamp: '2026-11-20T12:00:00Z', value: 0.5 },
      { timestamp: '2026-11-20T12:00:15Z', value: null },
    ];
    const parsed = metricsResponse.safeParse(body(points));
    expect(parsed.success).toBe(true);
    expect(parsed.data!.per_node_metrics[0]!.metrics.cpu_usage).toBe(points);
    expect(parsed.data!.per_node_metrics[0]!.metrics.gpu_utilization).toEqual({});
  });

  it.each([
    ['a value as text', [{ timestamp: '2026-11-20T12:00:00Z', value: '0.5' }]],
    ['no timestamp', [{ value: 0.5 }]],
    ['a numeric timestamp', [{ timestamp: 1, value: 0.5 }]],
    ['no value', [{ timestamp: '2026-11-20T12:00:00Z' }]],
    ['a point that is not an object', [null]],
    ['points that are not an array', { timestamp: '2026-11-20T12:00:00Z', value: 0.5 }],
  ])('rejects %s', (_what, points) => {
    const parsed = metricsResponse.safeParse(body(points));
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.path).toEqual(['per_node_metrics', 0, 'metrics', 'cpu_usage']);
  });
});
