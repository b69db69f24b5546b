// Queries run on graphql-jit: each document is compiled once into plain JavaScript that calls the
// same resolvers, instead of graphql-js walking the selection for every value (a dashboard's
// answer holds about a million point objects: the warm dashboard went from 2.0x to 1.0x its
// hand-written SQL floor). Subscriptions stay on graphql-js: each event is executed once and
// shared by its subscribers (server/shared-subscriptions.ts).
import { useGraphQlJit } from '@envelop/graphql-jit';
import { type DocumentNode, type FieldNode, GraphQLError, getOperationAST, getVariableValues, visit } from 'graphql';
import type { Plugin } from 'graphql-yoga';

export function useQueryJit(): Plugin {
  // Variables that do not fit their types are left to graphql-js, whose refusal (its message,
  // the variable's location, HTTP 400) is the one clients know; graphql-jit words it otherwise.
  const jit = useGraphQlJit(
    {},
    {
      enableIf: (args) => {
        const op = getOperationAST(args.document, args.operationName);
        if (op?.operation !== 'query') return false;
        return !op.variableDefinitions?.length || !getVariableValues(args.schema, op.variableDefinitions, args.variableValues ?? {}).errors;
      },
    },
  );
  return {
    onExecute(payload) {
      jit.onExecute?.(payload as never);
      return restoreErrorNodes;
    },
  };
}

// One hook object for every operation: the document comes with the hook's own arguments.
const restoreErrorNodes = {
  onExecuteDone({ args, result, setResult }: { args: { document: DocumentNode }; result: unknown; setResult: (result: never) => void }) {
    const errors = (result as { errors?: readonly GraphQLError[] }).errors;
    if (!errors?.length || !errors.some((e) => !e.nodes && e.locations)) return;
    setResult({ ...(result as object), errors: errors.map((e) => withNodes(e, args.document)) } as never);
  },
};

/** Field nodes by the line and column they start at, per document (built only when an answer has errors). */
const fieldsByPlace = new WeakMap<DocumentNode, Map<string, FieldNode>>();

/**
 * graphql-jit's field errors carry `locations` but not the AST nodes they come from, and yoga
 * rebuilds every error from its nodes before sending it (the locations were lost). The nodes are
 * found again by where they start, so a client sees the error graphql-js would give.
 */
function withNodes(error: GraphQLError, document: DocumentNode): GraphQLError {
  if (error.nodes || !error.locations) return error;
  let places = fieldsByPlace.get(document);
  if (!places) {
    const found = new Map<string, FieldNode>();
    visit(document, {
      Field(node) {
        if (node.loc) found.set(`${node.loc.startToken.line}:${node.loc.startToken.column}`, node);
      },
    });
    fieldsByPlace.set(document, (places = found));
  }
  const nodes = error.locations.map((l) => places.get(`${l.line}:${l.column}`)).filter((n): n is FieldNode => n !== undefined);
  if (nodes.length !== error.locations.length) return error;
  return new GraphQLError(error.message, { nodes, path: error.path, originalError: error.originalError, extensions: error.extensions });
}
