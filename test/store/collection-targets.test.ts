// What a provider's collector keeps, read at the start of every sweep (Runicorn's every 2 s): its
// unfinished jobs and its finished jobs not yet fetched whole within the platform's retention
// (oldest end first) in one statement; the jobs lost to retention counted in a second only where
// the platform has a retention.
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../src/domain/types.js';
import { useTestRepository } from '../support/database.js';

const suite = useTestRepository();

const T0 = new Date('2026-11-20T12:00:00Z');
const at = (hours: number) => new Date(T0.getTime() + hours * 3_600_000);

function job(n: number, status: JobRecord['status'], finishedAt: Date | null): JobRecord {
  return {
    externalId: `j${n}`,
    projectExternalId: 'p1',
    name: `job ${n}`,
    status,
    rawStatus: status.toLowerCase(),
    createdAt: at(-48),
    startedAt: at(-47),
    finishedAt,
    gpuType: null,
    gpuCount: null,
  };
}

describe('Repository.collectionTargets', () => {
  it('reads the unfinished and the finished jobs to fetch in one statement, the expired counted beside', async () => {
    const jobs = [
      job(1, 'RUNNING', null),
      job(2, 'PENDING', null),
      job(3, 'SUCCEEDED', at(-2)),
      job(4, 'FAILED', at(-1)),
      job(5, 'STOPPED', at(-30)),
      job(6, 'SUCCEEDED', at(-3)),
    ];
    await suite.repo.upsertCatalog('ct', [], jobs, T0);
    await suite.repo.markCollected(['ct:job:j6'], T0);
    await suite.repo.upsertCatalog('other', [], [job(1, 'RUNNING', null), job(2, 'FAILED', at(-1))], T0);

    const before = suite.db.statementCount();
    const all = await suite.repo.collectionTargets('ct', null);
    expect(suite.db.statementCount() - before).toBe(1);
    expect(all.unfinished.map((j) => j.id).sort()).toEqual(['ct:job:j1', 'ct:job:j2']);
    expect(all.finished.map((j) => j.id)).toEqual(['ct:job:j5', 'ct:job:j3', 'ct:job:j4']);
    expect(all.expired).toBe(0);

    const kept = await suite.repo.collectionTargets('ct', at(-24));
    expect(suite.db.statementCount() - before).toBe(3);
    expect(kept.unfinished.map((j) => j.id).sort()).toEqual(['ct:job:j1', 'ct:job:j2']);
    expect(kept.finished.map((j) => j.id)).toEqual(['ct:job:j3', 'ct:job:j4']);
    expect(kept.expired).toBe(1);
  });
});
