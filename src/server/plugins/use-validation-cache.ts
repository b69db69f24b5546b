// Validation results kept per schema and parsed document (yoga's parser cache hands the same
// document back for the same text), reused while the rules are the same functions. Yoga's own
// validation cache (turned off in yoga.ts) keyed every request by its rules' names joined into
// one string: about 35 names read and joined per request, several µs of a trivial query. The
// rules here are made once (use-limits.ts), so comparing them one by one is a few pointer checks.
// Placed after every plugin that adds a rule: it must see the whole list.
import type { DocumentNode, GraphQLError, GraphQLSchema, ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';

interface Validated {
  rules: readonly ValidationRule[] | undefined;
  result: readonly GraphQLError[];
}

function sameRules(a: readonly ValidationRule[] | undefined, b: readonly ValidationRule[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function useValidationCache(): Plugin {
  const bySchema = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Validated>>();
  return {
    onValidate({ params: { schema, documentAST, rules }, setResult }) {
      let byDocument = bySchema.get(schema);
      if (!byDocument) bySchema.set(schema, (byDocument = new WeakMap()));
      const known = byDocument.get(documentAST);
      if (known && sameRules(known.rules, rules)) {
        setResult(known.result as GraphQLError[]);
        return;
      }
      const cache = byDocument;
      // The result as the earlier plugins' after-hooks left it (yoga's cache kept the same).
      return ({ result }) => {
        cache.set(documentAST, { rules, result: result as readonly GraphQLError[] });
      };
    },
  };
}
