// Seed 001 (ShowTrainingJobMetrics): the documented example response, parsed into canonical points.
import { describe, expect, it } from 'vitest';
import { mapTaskMetrics, metricsResponseSchema } from '../../../src/providers/modelarts/mapping.js';
import type { SystemMetric } from '../../../src/domain/types.js';

// Verbatim from the seed's "Example Responses".
const SEED_EXAMPLE = {
  metrics: [
    { metric: 'cpuUsage', value: [-1, -1, 2.43, 4.524, 6.714, 12.422, 9.214, 5.36, 7.5, 10.088, 8.975, 11.423, 11.548, 14.563, 16.833] },
    { metric: 'memUsage', value: [-1, -1, 0.04, 0.521, 1.652, 4.252, 6.433, 7.384, 7.982, 8.718, 9.365, 9.881, 10.192, 9.994, 9.005] },
    { metric: 'gpuUtil', value: [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1] },
    { metric: 'gpuMemUsage', value: [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1] },
    { metric: 'npuUtil', value: [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1] },
    { metric: 'npuMemUsage', value: [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1] },
  ],
};

const ALL: SystemMetric[] = ['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION', 'CPU_UTILIZATION', 'MEMORY_UTILIZATION', 'NPU_UTILIZATION', 'NPU_MEMORY_UTILIZATION'];
const MINUTE = 60_000;
// The server answered at 10:15:30 UTC; the task started at 10:01:20.
const ANSWERED = Date.UTC(2025, 2, 1, 10, 15, 30);
const STARTED = new Date(Date.UTC(2025, 2, 1, 10, 1, 20));

describe('seed 001 example response', () => {
  const body = metricsResponseSchema.parse(SEED_EXAMPLE);
  const result = mapTaskMetrics(body, 'worker-0', new Set(ALL), {
    referenceMs: ANSWERED,
    referenceSource: 'server Date header',
    startedAt: STARTED,
    finishedAt: null,
  })!;

  it('keeps CPU and memory as node-scoped ratios and drops the all -1 GPU/NPU series', () => {
    expect(result.series.map((s) => [s.name, s.rawName, s.unit, s.scope, s.nodeExternalId, s.gpuIndex])).toEqual([
      ['CPU_UTILIZATION', 'cpuUsage', 'RATIO', 'NODE', 'worker-0', null],
      ['MEMORY_UTILIZATION', 'memUsage', 'RATIO', 'NODE', 'worker-0', null],
    ]);
  });

  it('labels the last value with the last complete minute (10:14) and steps back a minute per value', () => {
    const cpu = result.series[0]!;
    // 15 values: 10:00 lies wholly before the start (clipped), 10:01 is -1, 10:02..10:14 are samples.
    expect(cpu.points).toHaveLength(13);
    expect(cpu.points[0]).toEqual({ timestamp: new Date(Date.UTC(2025, 2, 1, 10, 2)), step: null, value: expect.closeTo(0.0243, 12) });
    expect(cpu.points.at(-1)).toEqual({ timestamp: new Date(Date.UTC(2025, 2, 1, 10, 14)), step: null, value: expect.closeTo(0.16833, 12) });
    const cpuValues = [2.43, 4.524, 6.714, 12.422, 9.214, 5.36, 7.5, 10.088, 8.975, 11.423, 11.548, 14.563, 16.833];
    cpu.points.forEach((p, i) => {
      expect(p.timestamp!.getTime()).toBe(Date.UTC(2025, 2, 1, 10, 2) + i * MINUTE);
      expect(p.value).toBeCloseTo(cpuValues[i]! / 100, 12);
    });
    const mem = result.series[1]!;
    const memValues = [0.04, 0.521, 1.652, 4.252, 6.433, 7.384, 7.982, 8.718, 9.365, 9.881, 10.192, 9.994, 9.005];
    expect(mem.points.map((p) => p.value)).toEqual(memValues.map((v) => expect.closeTo(v / 100, 12)));
    expect(cpu.meta).toMatchObject({
      missingSamples: 1,
      timeAlignment: {
        method: 'derived',
        intervalSeconds: 60,
        reference: 'server Date header',
        referenceTime: new Date(ANSWERED).toISOString(),
        lastMinuteStart: '2025-03-01T10:14:00.000Z',
        rawLength: 15,
        clippedBeforeStart: 1,
      },
    });
  });

  it('reports the window the arrays cover: 10:00 to 10:15', () => {
    expect(result.windowFrom.toISOString()).toBe('2025-03-01T10:00:00.000Z');
    expect(result.windowTo.toISOString()).toBe('2025-03-01T10:15:00.000Z');
  });

  it('anchors a finished job to its finish instead of the answer time', () => {
    const finished = mapTaskMetrics(body, 'worker-0', new Set(['CPU_UTILIZATION']), {
      referenceMs: ANSWERED + 3 * 3_600_000,
      referenceSource: 'server Date header',
      startedAt: STARTED,
      finishedAt: new Date(ANSWERED),
    })!;
    expect(finished.series).toHaveLength(1);
    expect(finished.series[0]!.points.at(-1)!.timestamp!.toISOString()).toBe('2025-03-01T10:14:00.000Z');
    expect(finished.series[0]!.meta.timeAlignment).toMatchObject({ reference: 'job finishedAt' });
  });
});
