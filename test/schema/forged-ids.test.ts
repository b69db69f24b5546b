// Ids and cursors carry arguments back (a fleet's filter and window, a comparison's runs and
// metrics, a live feed's names, a series' shaping): forged ones must be refused as the arguments
// they stand for are, BAD_INPUT naming the id, never INTERNAL from deeper in (issue 44, item 6).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
const fleet = (filter: unknown, from: unknown = '2026-11-19T00:00:00Z', to: unknown = '2026-11-20T00:00:00Z') => `*:fleet:${b64([filter, from, to])}`;
const comparison = (jobIds: unknown, metrics: unknown, axis: unknown = 'STEP', from: unknown = null, maxPoints: unknown = 100, aggregation: unknown = 'AVG') =>
  `*:comparison:${b64([jobIds, metrics, axis, from, null, maxPoints, aggregation])}`;

const NODE = `query($id: ID!) { node(id: $id) { id ... on Fleet { jobCount problems { code } jobs { __typename } } ... on RunComparison { x runs { jobId } } ... on MetricSeries { name } ... on UtilizationSample { id } } }`;

describe('forged ids and cursors', () => {
  let s: TestServer;
  let jobId: string;
  beforeAll(async () => {
    s = await startTestServer();
    jobId = (await s.gql('{ jobs(first: 1) { edges { node { id } } } }')).data.jobs.edges[0].node.id;
  });
  afterAll(() => s.close());

  const forged: [string, () => string][] = [
    ['a fleet window end that is a number', () => fleet({ created: { from: 5 } })],
    ['a fleet filter list holding null', () => fleet({ labels: [null] })],
    ['a fleet filter of metric names holding null', () => fleet({ hasTrainingMetrics: [null] })],
    ['a fleet filter with an unknown status', () => fleet({ statuses: ['NAPPING'] })],
    ['a fleet window that is not a time', () => fleet(null, 'soon', 'later')],
    ['a comparison of a system metric that does not exist', () => comparison([jobId], [['system', 'NOPE']])],
    ['a comparison with a null run', () => comparison([null], [['training', 'loss']])],
    ['a comparison on an unknown axis', () => comparison([jobId], [['training', 'loss']], 'SIDEWAYS')],
    ['a comparison from a time that is not one', () => comparison([jobId], [['training', 'loss']], 'STEP', 'soon')],
    ['a comparison with an unknown aggregation', () => comparison([jobId], [['training', 'loss']], 'STEP', null, 100, 'NOPE')],
    ['a live sample of a metric that does not exist', () => `${jobId.split(':')[0]}:sample:${b64([['NOPE'], null, 10, 'AVG'])}:${jobId}`],
    ['a series shaped by an unknown aggregation', () => `${jobId.split(':')[0]}:series:${b64([`${jobId}|system|GPU_UTILIZATION`, null, null, 10, 'NOPE'])}`],
  ];

  it.each(forged)('%s answers BAD_INPUT naming the id', async (_, id) => {
    const res = await s.gql(NODE, { id: id() });
    expect(res.data?.node ?? null).toBeNull();
    expect(res.errors?.map((e) => [e.extensions?.code, e.extensions?.argument])).toEqual([['BAD_INPUT', 'id']]);
    const many = await s.gql('query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Fleet { jobCount } } }', { ids: [id(), id()] });
    expect([...new Set(many.errors?.map((e) => e.extensions?.code))]).toEqual(['BAD_INPUT']);
  });

  it('a well-formed fleet id that was never issued is answered like the question it names', async () => {
    const direct = await s.gql(
      '{ fleet(from: "2026-11-19T00:00:00Z", to: "2026-11-20T00:00:00Z", filter: { created: { from: "2026-11-19T00:00:00Z" } }) { jobCount } }',
    );
    const res = await s.gql(NODE, { id: fleet({ created: { from: '2026-11-19T00:00:00Z' } }) });
    expect(res.errors).toBeUndefined();
    expect(res.data.node.jobCount).toBe(direct.data.fleet.jobCount);
  });
});
