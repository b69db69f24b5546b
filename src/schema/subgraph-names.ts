// Other names for output-only enums and scalars in the subgraph SDL (`_service { sdl }`), and only
// there: SUBGRAPH_TYPE_NAMES=JobStatus:TrainingJobStatus. Federation merges same-named types of
// every subgraph; an enum another subgraph takes as an argument must then hold the same values in
// every subgraph defining it (ENUM_VALUE_MISMATCH), whatever the other positions, and neither
// @inaccessible (a value our fields return cannot be hidden from the supergraph, and the type
// cannot while Job.status returns it) nor @shareable (objects' fields only) lifts that. A name of
// its own in the supergraph does, and costs the plain schema and its clients nothing.
//
// It holds only where a router's requests to this server never name the type, since this server
// executes them against its own names: an enum or scalar that no argument, input field or
// directive argument takes (the router names those in variable definitions). Objects, interfaces
// and unions are named in `... on T` fragments, `__typename` and `_entities` representations, so
// never. The values themselves are unchanged, so what this server answers is valid in the renamed type.
import {
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  Kind,
  parse,
  print,
  visit,
} from 'graphql';

export class SubgraphNamesError extends Error {
  constructor(message: string) {
    super(`SUBGRAPH_TYPE_NAMES: ${message}`);
    this.name = 'SubgraphNamesError';
  }
}

/** The subgraph SDL with the listed types renamed; throws SubgraphNamesError for any type that may not be. */
export function renameInSubgraphSdl(served: GraphQLSchema, sdl: string, names: ReadonlyMap<string, string>): string {
  if (names.size === 0) return sdl;
  checkRenames(served, names);
  const renamed = visit(parse(sdl), {
    [Kind.NAMED_TYPE]: (node) => rename(node, names),
    [Kind.ENUM_TYPE_DEFINITION]: (node) => rename(node, names),
    [Kind.ENUM_TYPE_EXTENSION]: (node) => rename(node, names),
    [Kind.SCALAR_TYPE_DEFINITION]: (node) => rename(node, names),
    [Kind.SCALAR_TYPE_EXTENSION]: (node) => rename(node, names),
  });
  return `${print(renamed)}\n`;
}

function rename<T extends { name: { value: string } }>(node: T, names: ReadonlyMap<string, string>): T | undefined {
  const to = names.get(node.name.value);
  return to === undefined ? undefined : { ...node, name: { ...node.name, value: to } };
}

function checkRenames(served: GraphQLSchema, names: ReadonlyMap<string, string>): void {
  const inputs = inputPositions(served);
  for (const [from, to] of names) {
    const type = served.getType(from);
    if (!type) throw new SubgraphNamesError(`this schema has no type ${from}`);
    if (served.getType(to)) throw new SubgraphNamesError(`${from} cannot be named ${to}: this schema already has a type ${to}`);
    if (to.startsWith('_') || to.includes('__') || to === 'FieldSet') {
      throw new SubgraphNamesError(`${from} cannot be named ${to}: GraphQL and Federation reserve names that start with _, hold __, or FieldSet`);
    }
    if (!isEnumType(type) && !isScalarType(type)) {
      throw new SubgraphNamesError(
        `${from} is not an enum or scalar: a router names objects, interfaces and unions in its requests (\`... on ${from}\`, __typename, _entities) and input objects in its variables, and this server knows it only as ${from}`,
      );
    }
    if (isSpecifiedScalarType(type)) throw new SubgraphNamesError(`${from} is a built-in scalar every subgraph shares`);
    const where = inputs.get(from);
    if (where) {
      throw new SubgraphNamesError(
        `${from} is taken as input by ${where}: a router would name it in its variables' types, and this server knows it only as ${from}`,
      );
    }
  }
}

/** Each named type an argument, input field or directive argument takes -> the first such position. */
function inputPositions(served: GraphQLSchema): Map<string, string> {
  const found = new Map<string, string>();
  const note = (type: GraphQLInputType, where: string) => {
    const name = getNamedType(type).name;
    if (!found.has(name)) found.set(name, where);
  };
  for (const type of Object.values(served.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields()) as GraphQLField<unknown, unknown>[]) {
        for (const arg of field.args) note(arg.type, `${type.name}.${field.name}(${arg.name}:)`);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) note(field.type, `${type.name}.${field.name}`);
    }
  }
  for (const directive of served.getDirectives()) for (const arg of directive.args) note(arg.type, `@${directive.name}(${arg.name}:)`);
  return found;
}
