// The validation cache (src/server/plugins/use-validation-cache.ts) validates a document once per
// set of rules, and again whenever the rules differ, on a real yoga with its own cache turned off
// as the server runs it.
import { createSchema, createYoga, type Plugin } from 'graphql-yoga';
import type { ValidationRule } from 'graphql';
import { describe, expect, it } from 'vitest';
import { useValidationCache } from '../../src/server/plugins/use-validation-cache.js';

const schema = createSchema({ typeDefs: 'type Query { hello: String }', resolvers: { Query: { hello: () => 'hi' } } });

function serve(rulePerRequest: () => ValidationRule): { ask: (query: string) => Promise<any> } {
  const addRule: Plugin = {
    onValidate({ addValidationRule }) {
      addValidationRule(rulePerRequest());
    },
  };
  const yoga = createYoga({ schema, logging: false, parserAndValidationCache: { validationCache: false }, plugins: [addRule, useValidationCache()] });
  return {
    ask: async (query) =>
      (await yoga.fetch('http://yoga/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json(),
  };
}

/** A rule that counts the validations it takes part in. */
function countingRule(): { rule: ValidationRule; runs: () => number } {
  let runs = 0;
  return {
    rule: () => {
      runs++;
      return {};
    },
    runs: () => runs,
  };
}

describe('validation cache', () => {
  it('validates a document once while the rules are the same functions', async () => {
    const counting = countingRule();
    const { ask } = serve(() => counting.rule);
    for (let i = 0; i < 3; i++) expect(await ask('{ hello }')).toEqual({ data: { hello: 'hi' } });
    expect(counting.runs()).toBe(1);
    // Another document is validated on its own.
    expect(await ask('{ a: hello }')).toEqual({ data: { a: 'hi' } });
    expect(counting.runs()).toBe(2);
  });

  it('validates again when a rule is a different function', async () => {
    let runs = 0;
    const { ask } = serve(() => () => {
      runs++;
      return {};
    });
    expect(await ask('{ hello }')).toEqual({ data: { hello: 'hi' } });
    expect(await ask('{ hello }')).toEqual({ data: { hello: 'hi' } });
    expect(runs).toBe(2);
  });

  it('answers an invalid document with the same errors from the cache', async () => {
    const counting = countingRule();
    const { ask } = serve(() => counting.rule);
    const first = await ask('{ nope }');
    const second = await ask('{ nope }');
    expect(first.errors[0].message).toMatch(/Cannot query field "nope"/);
    expect(second).toEqual(first);
    expect(counting.runs()).toBe(1);
  });
});
