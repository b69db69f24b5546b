// Appends the stale-data errors the resolvers reported (src/schema/staleness.ts) to the answer's
// errors[]. A subscription's stream reports failures as its own error events instead.
import type { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../../schema/context.js';

export function useStaleErrors(): Plugin {
  return {
    onExecute({ args }) {
      const context = args.contextValue as unknown as Context;
      return {
        onExecuteDone({ result, setResult }) {
          const stale = context.staleErrors;
          if (!stale || stale.size === 0 || Symbol.asyncIterator in Object(result)) return;
          const single = result as { errors?: readonly GraphQLError[] };
          setResult({ ...single, errors: [...(single.errors ?? []), ...stale.values()] } as never);
          stale.clear();
        },
      };
    },
  };
}
