// A jobs connection whose selection asks only for identity, name, status and provider reads the
// list columns (JOB_LIST_FIELDS) instead of whole rows (issue 22): which selections qualify, and
// that such a page answers exactly what the whole-row page answers.
import { Kind, parse, type FragmentDefinitionNode, type GraphQLResolveInfo, type OperationDefinitionNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listColumnsSuffice } from '../../src/schema/job-connection.js';
import { startTestServer, type GqlResult, type TestServer } from '../support/runtime.js';

/** The resolve info of the operation's first field (the jobs connection), as far as the rule reads it. */
function infoOf(document: string): GraphQLResolveInfo {
  const doc = parse(document);
  const op = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const field = op.selectionSet.selections[0]!;
  if (field.kind !== Kind.FIELD) throw new Error('the first selection must be a field');
  const fragments = Object.fromEntries(
    doc.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
  );
  return { fieldNodes: [field], fragments } as unknown as GraphQLResolveInfo;
}

describe('which job lists read the list columns', () => {
  it.each([
    [
      'edges and nodes of listed fields',
      '{ jobs { edges { cursor node { id name status provider { kind name } } } nodes { id externalId rawStatus __typename } } }',
    ],
    ['paging and counts beside them', '{ jobs { pageInfo { endCursor hasNextPage } totalCount sourceErrors { code } edges { node { id } } } }'],
    [
      'through fragments and inline fragments',
      '{ jobs { ...Page } } fragment Page on JobConnection { edges { node { ...J ... on Job { status } } } } fragment J on Job { id name }',
    ],
  ])('%s: yes', (_name, document) => {
    expect(listColumnsSuffice(infoOf(document))).toBe(true);
  });

  it.each([
    ['a field read from the rest of the row', '{ jobs { edges { node { id createdAt } } } }'],
    ['one in a fragment', '{ jobs { nodes { ...J } } } fragment J on Job { id labels { key } }'],
    ['one in an inline fragment under edges', '{ jobs { edges { ... on JobEdge { node { project { id } } } } } }'],
    ['a field with its own reads', '{ jobs { nodes { id nodes { name } } } }'],
    ['a fragment that is not in the document', '{ jobs { nodes { ...Missing } } }'],
  ])('%s: no', (_name, document) => {
    expect(listColumnsSuffice(infoOf(document))).toBe(false);
  });
});

describe('a job list read with the list columns', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 2, jobsPerProject: 4, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 1, statuses: ['TRAINING_JOB_RUNNING', 'TRAINING_JOB_FAILED'] },
    });
  });
  afterAll(() => s.close());

  const page = (extra: string) => `query($after: String) {
    jobs(first: 3, after: $after) {
      pageInfo { endCursor hasNextPage }
      edges { cursor node { id externalId name status rawStatus provider { kind name } ${extra} } }
    }
  }`;

  it('answers what the whole-row page answers, page after page', async () => {
    let after: string | null = null;
    let jobs = 0;
    for (let i = 0; i < 4; i++) {
      const list: GqlResult = await s.gql(page(''), { after });
      const whole = await s.gql(page('createdAt'), { after });
      expect(list.errors).toBeUndefined();
      expect(whole.errors).toBeUndefined();
      for (const e of whole.data.jobs.edges) {
        expect(e.node.createdAt).toEqual(expect.any(String));
        delete e.node.createdAt;
      }
      expect(list.data).toEqual(whole.data);
      jobs += list.data.jobs.edges.length;
      if (!list.data.jobs.pageInfo.hasNextPage) break;
      after = list.data.jobs.pageInfo.endCursor;
    }
    expect(jobs).toBe(8);
  });
});
