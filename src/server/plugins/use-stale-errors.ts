// Appends the stale-data errors the resolvers reported (src/schema/staleness.ts) to the answer's
// errors[]. A subscription's stream reports failures as its own error events instead.
import type { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../../schema/index.js';

// One hook object for every operation: the context comes with the hook's own arguments.
const appendStaleErrors = {
  onExecuteDone({ args, result, setResult }: { args: { contextValue: unknown }; result: unknown; setResult: (result: never) => void }) {
    const stale = (args.contextValue as Context).staleErrors;
    if (!stale || stale.size === 0 || Symbol.asyncIterator in Object(result)) return;
    const single = result as { errors?: readonly GraphQLError[] };
    setResult({ ...single, errors: [...(single.errors ?? []), ...stale.values()] } as never);
    stale.clear();
  },
};

export function useStaleErrors(): Plugin {
  return {
    onExecute() {
      return appendStaleErrors;
    },
  };
}
