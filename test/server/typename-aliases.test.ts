// Every alias counts against MAX_QUERY_ALIASES, `__typename` ones too (issue 44, item 10):
// graphql-armor leaves them out by default, and 60 of them passed a limit of 30.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

describe('the alias limit', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `t${i}: __typename`).join(' ')} }`;

  it('refuses 60 __typename aliases, at the root and nested', async () => {
    expect((await s.gql(aliased(60))).errors?.map((e) => e.extensions?.code)).toEqual(['TOO_MANY_ALIASES']);
    const nested = `{ providers { ${Array.from({ length: 60 }, (_, i) => `t${i}: __typename`).join(' ')} } }`;
    expect((await s.gql(nested)).errors?.map((e) => e.extensions?.code)).toEqual(['TOO_MANY_ALIASES']);
  });

  it('answers 30, the limit', async () => {
    const res = await s.gql(aliased(30));
    expect(res.errors).toBeUndefined();
    expect(Object.keys(res.data)).toHaveLength(30);
  });
});
