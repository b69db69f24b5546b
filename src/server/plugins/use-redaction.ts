// Last line of defence for secrets: no error a client sees (message or extensions) may carry a
// provider key, whatever an adapter or a library put in it.
import { GraphQLError, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { redactSecrets } from '../../config/security.js';

function clean(result: ExecutionResult, secrets: readonly string[]): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((e) => {
    const text = JSON.stringify({ m: e.message, x: e.extensions ?? {} });
    const redacted = redactSecrets(text, secrets);
    if (redacted === text) return e;
    const { m, x } = JSON.parse(redacted) as { m: string; x: Record<string, unknown> };
    return new GraphQLError(m, { nodes: e.nodes, path: e.path, extensions: x });
  });
  return { ...result, errors };
}

export function useSecretRedaction(secrets: readonly string[]): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      if (secrets.length === 0) return;
      if (Array.isArray(result)) setResult(result.map((r) => clean(r, secrets)));
      else if (!(Symbol.asyncIterator in Object(result))) setResult(clean(result as ExecutionResult, secrets));
    },
  };
}
