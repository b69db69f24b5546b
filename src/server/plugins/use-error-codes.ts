// Every error a client sees carries extensions.code. Domain errors keep their code and safe
// details; anything unexpected is masked as INTERNAL (and logged), so no internals or secrets leak.
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { DomainError } from '../../domain/errors.js';

export function maskError(logger: Logger) {
  return (error: unknown, message: string): Error => {
    const original = error instanceof GraphQLError ? (error.originalError ?? null) : error;
    if (original instanceof DomainError) {
      const g = error instanceof GraphQLError ? error : null;
      return new GraphQLError(original.message, {
        nodes: g?.nodes,
        path: g?.path,
        extensions: { code: original.code, ...original.details },
      });
    }
    if (error instanceof GraphQLError && !error.originalError) {
      return error.extensions?.code ? error : withCode(error, 'BAD_REQUEST');
    }
    if (error instanceof GraphQLError && error.originalError instanceof GraphQLError) {
      return error.originalError.extensions?.code ? error : withCode(error, 'BAD_INPUT');
    }
    logger.error({ err: original }, 'unexpected error in a resolver');
    const g = error instanceof GraphQLError ? error : null;
    return new GraphQLError(message, { nodes: g?.nodes, path: g?.path, extensions: { code: 'INTERNAL' } });
  };
}

function withCode(error: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

/** Validation errors (unknown fields, wrong argument types) get GRAPHQL_VALIDATION_FAILED. */
export function useErrorCodes(): Plugin {
  return {
    onValidate() {
      return ({ result, setResult }) => {
        if (result.length > 0) setResult(result.map((e) => (e.extensions?.code ? e : withCode(e, 'GRAPHQL_VALIDATION_FAILED'))));
      };
    },
  };
}
