// Arguments that come back inside an id or a cursor (a fleet's filter and window, a comparison's
// runs and metrics, a live feed's names, a log page's since) never passed GraphQL's input checks:
// a forged one reached the resolvers as whatever JSON it held (a number where a Date belongs, a
// null inside a list) and failed there as INTERNAL. Each is checked and coerced here by the schema
// itself (graphql-js' coerceInputValue against the type of the argument it stands for), so it is
// exactly as valid as the argument typed by a client, and anything else is the client's BAD_INPUT.
import { coerceInputValue, type GraphQLArgument, type GraphQLSchema, isObjectType } from 'graphql';
import { DomainError } from '../domain/errors.js';

/** The built schema, given by index.ts once built (importing it here would be a cycle: the types import this file). */
let built: GraphQLSchema | null = null;

export function checkDecodedArgsAgainst(schema: GraphQLSchema): void {
  built = schema;
}

/** BAD_INPUT about what an id or cursor carries: value-nodes.ts answers it, where a malformed id is only null. */
export class DecodedArgError extends DomainError {}

function argumentOf(field: string, name: string): GraphQLArgument {
  const [typeName, fieldName] = field.split('.') as [string, string];
  if (!built) throw new Error('decoded-args: the schema is not built yet');
  const type = built.getType(typeName);
  const arg = isObjectType(type) ? type.getFields()[fieldName]?.args.find((a) => a.name === name) : undefined;
  if (!arg) throw new Error(`${field}(${name}) is not in the schema`);
  return arg;
}

/**
 * `values` checked and coerced as `field`'s arguments of the same names (e.g. `Query.fleet`); throws
 * BAD_INPUT naming `what` (the id or cursor argument they came in) on the first that does not fit.
 */
export function decodedArgs<T extends Record<string, unknown>>(field: string, values: T, what: string): T {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values)) {
    const arg = argumentOf(field, name);
    out[name] = coerceInputValue(value, arg.type, (path, _invalid, error) => {
      throw new DecodedArgError('BAD_INPUT', `"${what}" carries ${field}'s "${[name, ...path].join('.')}" that is not valid: ${error.message}`, {
        argument: what,
      });
    });
  }
  return out as T;
}
