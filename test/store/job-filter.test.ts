// The job filter is one definition with two forms: SQL for pages, counts and fleet windows, and a
// predicate for jobs arriving on a live status stream. Both must select exactly the same jobs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRecord } from '../../src/domain/types.js';
import { jobMatches, type JobFilter } from '../../src/store/job-filter.js';
import type { JobCursor, JobOrder } from '../../src/store/job-filter.js';
import { JOB_LIST_FIELDS, type OrderedJobRow, type Repository } from '../../src/store/repository.js';
import { openTestRepository } from '../support/database.js';

const job = (externalId: string, name: string, status: JobRecord['status'], projectExternalId: string, extra: Partial<JobRecord> = {}): JobRecord => ({
  externalId,
  projectExternalId,
  name,
  status,
  rawStatus: null,
  createdAt: new Date('2026-01-01T00:00:00Z'),
  startedAt: null,
  finishedAt: null,
  gpuType: null,
  gpuCount: null,
  ...extra,
});

const D = (iso: string) => new Date(iso);

const FILTERS: JobFilter[] = [
  {},
  { providerIds: ['a'] },
  { providerIds: [] },
  { statuses: ['RUNNING'] },
  { statuses: ['RUNNING', 'FAILED'], providerIds: ['b'] },
  { projectId: 'a:project:p1' },
  { projectIds: ['a:project:p1', 'b:project:p3'] },
  { projectIds: [] },
  { nameContains: 'LLaMA' },
  { nameContains: '50%' },
  { nameContains: 'a_b' },
  { nameContains: 'train', statuses: ['SUCCEEDED'], projectIds: ['b:project:p3'] },
  { labels: [{ key: 'team' }] },
  { labels: [{ key: 'team', value: 'vision' }] },
  { labels: [{ key: 'baseline', value: null }] },
  { labels: [{ key: 'team', value: 'vision' }, { key: 'baseline' }] },
  { labels: [{ key: 'team', value: 'nope' }] },
  { owners: ['alice'] },
  { owners: ['alice', 'bob'], statuses: ['RUNNING'] },
  { owners: [] },
  { owners: ['ALICE'] },
  { owners: ['alice@example.com'] },
  { owners: ['alice@other.org', 'Bob'] },
  { owners: ['carol@example.com'] },
  { started: { from: D('2026-01-01T12:00:00Z') } },
  { started: { to: D('2026-01-01T12:00:00Z') } },
  { finished: { from: D('2026-01-01T00:00:00Z'), to: D('2026-01-03T00:00:00Z') } },
  { created: { to: D('2025-12-31T00:00:00Z') } },
];

describe('job filter', () => {
  let store: Awaited<ReturnType<typeof openTestRepository>>;
  let repo: Repository;

  beforeAll(async () => {
    store = await openTestRepository();
    repo = store.repo;
    await repo.upsertProviders([
      { id: 'a', kind: 'BASETEN', name: 'a', simulated: true },
      { id: 'b', kind: 'RUNICORN', name: 'b', simulated: true },
    ]);
    const at = new Date('2026-01-02T00:00:00Z');
    await repo.upsertCatalog(
      'a',
      [
        { externalId: 'p1', name: 'one' },
        { externalId: 'p2', name: 'two' },
      ],
      [
        job('j1', 'llama-train', 'RUNNING', 'p1', { owner: 'alice', labels: [{ key: 'team', value: 'vision' }], startedAt: D('2026-01-01T10:00:00Z') }),
        job('j2', 'LLAMA eval 50% data', 'FAILED', 'p1', {
          owner: 'bob',
          labels: [{ key: 'team', value: 'nlp' }],
          startedAt: D('2026-01-01T13:00:00Z'),
          finishedAt: D('2026-01-02T00:00:00Z'),
        }),
        job('j3', 'axb-sweep', 'SUCCEEDED', 'p2', { owner: 'alice', labels: [] }),
      ],
      at,
    );
    await repo.upsertCatalog(
      'b',
      [{ externalId: 'p3', name: 'three' }],
      [
        job('j4', 'a_b-train', 'SUCCEEDED', 'p3', {
          labels: [
            { key: 'baseline', value: null },
            { key: 'team', value: 'vision' },
          ],
        }),
        job('j5', 'Train-llama', 'RUNNING', 'p3', { owner: 'bob', startedAt: D('2026-01-01T12:00:00Z') }),
        job('j6', '50 percent', 'FAILED', 'p3', { owner: 'Alice@Example.com' }),
      ],
      at,
    );
  });
  afterAll(() => store?.close());

  it('selects the same jobs in SQL and as a predicate', async () => {
    const all = await repo.jobsPage({ filter: {}, limit: 100, cursor: null });
    expect(all).toHaveLength(6);
    for (const filter of FILTERS) {
      const inSql = (await repo.jobsPage({ filter, limit: 100, cursor: null })).map((j) => j.id).sort();
      const inJs = all
        .filter((j) => jobMatches(filter, j))
        .map((j) => j.id)
        .sort();
      expect(inJs, JSON.stringify(filter)).toEqual(inSql);
      expect(await repo.jobsCount(filter)).toBe(inSql.length);
    }
    // The cases are not vacuous: some select a few, some none.
    expect((await repo.jobsPage({ filter: { nameContains: '50%' }, limit: 100, cursor: null })).map((j) => j.externalId)).toEqual(['j2']);
    expect((await repo.jobsPage({ filter: { nameContains: 'a_b' }, limit: 100, cursor: null })).map((j) => j.externalId)).toEqual(['j4']);
    expect((await repo.jobsPage({ filter: { labels: [{ key: 'team', value: 'vision' }] }, limit: 100, cursor: null })).map((j) => j.externalId).sort()).toEqual(
      ['j1', 'j4'],
    );
    expect(
      (await repo.jobsPage({ filter: { started: { from: D('2026-01-01T12:00:00Z') } }, limit: 100, cursor: null })).map((j) => j.externalId).sort(),
    ).toEqual(['j2', 'j5']);
  });

  it('matches an owner as people type it: any case, a name for an address', async () => {
    const owned = async (owners: string[]) => {
      const page = (await repo.jobsPage({ filter: { owners }, limit: 100, cursor: null })).map((j) => j.externalId).sort();
      expect(await repo.jobsCount({ owners })).toBe(page.length);
      return page;
    };
    // A name finds the address whose local part it is (Baseten's alice@example.com) and the name itself.
    expect(await owned(['alice'])).toEqual(['j1', 'j3', 'j6']);
    expect(await owned(['ALICE'])).toEqual(['j1', 'j3', 'j6']);
    // An address finds itself in any case, and the name that is its local part; another address does not.
    expect(await owned(['alice@example.com'])).toEqual(['j1', 'j3', 'j6']);
    expect(await owned(['alice@other.org'])).toEqual(['j1', 'j3']);
    expect(await owned(['carol@example.com'])).toEqual([]);
  });

  it('reads the same pages with the list columns alone as with whole rows', async () => {
    // The list form holds JOB_LIST_FIELDS only, with the values, order keys and paging of whole rows.
    const orders: (JobOrder | undefined)[] = [
      undefined,
      { by: 'NAME', direction: 'ASC' },
      { by: 'STARTED', direction: 'DESC' },
      { by: 'ACCELERATOR_COUNT', direction: 'ASC' },
    ];
    let compared = 0;
    for (const filter of FILTERS) {
      for (const order of orders) {
        for (const direction of ['forward', 'backward'] as const) {
          let cursor: JobCursor | null = null;
          for (let page = 0; page < 4; page++) {
            const whole: OrderedJobRow[] = await repo.jobsPage({ filter, limit: 2, cursor, direction, order });
            const list = await repo.jobsPage({ filter, limit: 2, cursor, direction, order, columns: 'list' });
            // Filters that no prepared statement covers read whole rows either way.
            const pick = (rows: typeof list) => rows.map((j) => ({ ...Object.fromEntries(JOB_LIST_FIELDS.map((f) => [f, j[f]])), orderKey: j.orderKey }));
            expect(pick(list), JSON.stringify({ filter, order, direction, page })).toEqual(pick(whole));
            compared += list.filter((j) => Object.keys(j).length === JOB_LIST_FIELDS.length + 1).length;
            if (whole.length <= 2) break;
            cursor = { key: whole[1]!.orderKey, id: whole[1]!.id };
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(50);
    // With the list records beside the page, as a warm list reads them.
    const withSyncs = await repo.jobsPageWithListSyncs(['a', 'b'], { filter: {}, limit: 3, cursor: null, direction: 'forward', columns: 'list' });
    expect(Object.keys(withSyncs!.rows[0]!).sort()).toEqual([...JOB_LIST_FIELDS, 'orderKey'].sort());
  });

  it('keeps labels and owners a later list does not carry', async () => {
    // A list answer without labels (undefined) leaves the detail's; one that says [] clears them.
    await repo.upsertJobs('b', [job('j4', 'a_b-train', 'SUCCEEDED', 'p3')], new Date('2026-01-03T00:00:00Z'));
    expect((await repo.jobsByIds(['b:job:j4']))[0]!.labels).toEqual({ baseline: null, team: 'vision' });
    await repo.upsertJobs('b', [job('j4', 'a_b-train', 'SUCCEEDED', 'p3', { labels: [] })], new Date('2026-01-03T00:00:00Z'));
    expect((await repo.jobsByIds(['b:job:j4']))[0]!.labels).toEqual({});
  });
});
