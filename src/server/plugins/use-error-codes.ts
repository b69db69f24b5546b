// Every error a client sees carries extensions.code. Domain errors keep their code and safe
// details; anything unexpected is masked as INTERNAL (and logged), so no internals or secrets leak.
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { DomainError } from '../../domain/errors.js';
import { clientFacingError } from '../../store/index.js';

/** While Postgres is away every cache-backed field fails; one warning per this many ms says so. */
const UNAVAILABLE_LOG_EVERY_MS = 5_000;

export function maskError(logger: Logger) {
  let unavailableLoggedAt = 0;
  let unavailableSinceLog = 0;
  const noteUnavailable = (err: unknown) => {
    unavailableSinceLog++;
    if (Date.now() - unavailableLoggedAt < UNAVAILABLE_LOG_EVERY_MS) return;
    logger.warn({ err, fieldErrors: unavailableSinceLog }, 'cache database unreachable');
    unavailableLoggedAt = Date.now();
    unavailableSinceLog = 0;
  };
  return (error: unknown, message: string): Error => {
    const original = innermost(error);
    const g = isGraphQLError(error) ? error : null;
    // Domain errors as they are; Postgres restarting or failing over as CACHE_UNAVAILABLE (retryable).
    const known = clientFacingError(original);
    if (known) {
      if (!(original instanceof DomainError)) noteUnavailable(original);
      return new GraphQLError(known.message, { nodes: g?.nodes, path: g?.path, extensions: { code: known.code, ...known.details } });
    }
    // A GraphQLError thrown on purpose (scalar parsing, validation) is already client-facing.
    if (isGraphQLError(original)) {
      if (original.extensions?.code) return g && g !== original ? withCode(g, String(original.extensions.code)) : original;
      return withCode(g ?? original, 'BAD_REQUEST');
    }
    // @apollo/subgraph's answer to a representation of a type this graph does not have: bad input, not a fault.
    if (original instanceof Error && original.message.startsWith('The _entities resolver tried to load an entity for type')) {
      return new GraphQLError('a representation names a type this subgraph does not have', {
        nodes: g?.nodes,
        path: g?.path,
        extensions: { code: 'BAD_INPUT' },
      });
    }
    logger.error({ err: original }, 'unexpected error in a resolver');
    return new GraphQLError(message, { nodes: g?.nodes, path: g?.path, extensions: { code: 'INTERNAL' } });
  };
}

/** graphql-js and DataLoader may wrap a thrown error more than once; the first thrower decides. */
function innermost(error: unknown): unknown {
  let e = error;
  while (isGraphQLError(e) && e.originalError) e = e.originalError;
  return e;
}

/**
 * graphql ships CommonJS and ESM builds and parts of the executor load the other one, so a
 * GraphQLError may not be an instance of the class imported here: recognise it by its name.
 */
function isGraphQLError(e: unknown): e is GraphQLError {
  return e instanceof GraphQLError || (e instanceof Error && e.name === 'GraphQLError');
}

/** The same error (location, path, cause kept) with `code` in its extensions and, optionally, a new message. */
export function withCode(error: GraphQLError, code: string, message = error.message): GraphQLError {
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

/** One function for every validation (no closure per request); a valid document costs a length check. */
function codeValidationErrors({ result, setResult }: { result: readonly Error[]; setResult: (errors: GraphQLError[]) => void }): void {
  if (result.length > 0) setResult((result as readonly GraphQLError[]).map((e) => (e.extensions?.code ? e : withCode(e, 'GRAPHQL_VALIDATION_FAILED'))));
}

/** Validation errors (unknown fields, wrong argument types) get GRAPHQL_VALIDATION_FAILED. */
export function useErrorCodes(): Plugin {
  return {
    onValidate() {
      return codeValidationErrors;
    },
  };
}
