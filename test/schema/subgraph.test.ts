// The printed SDL files are the code's: schema/schema.graphql (plain) and schema/subgraph.graphql
// (what a gateway composes) fail this test when they drift. Run `npm run schema:print` to update.
import { readFileSync } from 'node:fs';
import { validateSubgraph } from '@theguild/federation-composition';
import { graphql, isObjectType, parse, type GraphQLSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { plainSchema, schema } from '../../src/schema/index.js';
import { SCHEMA_FILE, SUBGRAPH_FILE, printedSchema, printedSubgraph } from '../../src/schema/print.js';

const ENTITIES = ['Provider', 'Project', 'Job', 'ComputeNode', 'Gpu'];

function keysOf(sdl: string, typeName: string): string[] {
  const def = parse(sdl).definitions.find((d) => d.kind === 'ObjectTypeDefinition' && d.name.value === typeName);
  if (def?.kind !== 'ObjectTypeDefinition') return [];
  return (def.directives ?? [])
    .filter((d) => d.name.value === 'key')
    .map((d) => {
      const fields = d.arguments?.find((a) => a.name.value === 'fields')?.value;
      return fields?.kind === 'StringValue' ? fields.value : '';
    });
}

function fieldsByType(s: GraphQLSchema): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const type of Object.values(s.getTypeMap())) {
    if (isObjectType(type) && !type.name.startsWith('__')) out.set(type.name, Object.keys(type.getFields()).sort());
  }
  return out;
}

describe('printed schemas', () => {
  it('schema/schema.graphql matches the code', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8'), 'run `npm run schema:print`').toBe(printedSchema());
  });

  it('schema/subgraph.graphql matches the code', () => {
    expect(readFileSync(SUBGRAPH_FILE, 'utf8'), 'run `npm run schema:print`').toBe(printedSubgraph());
  });

  it('every object type with an id is a Relay Node (Query.node answers it); only the root types and connection plumbing have none', () => {
    const withoutId: string[] = [];
    const notNodes: string[] = [];
    for (const type of Object.values(plainSchema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith('__')) continue;
      if (!type.getFields().id) withoutId.push(type.name);
      else if (!type.getInterfaces().some((i) => i.name === 'Node')) notNodes.push(type.name);
    }
    expect(withoutId.sort()).toEqual(['FindingConnection', 'FindingEdge', 'JobConnection', 'JobEdge', 'Mutation', 'PageInfo', 'Query', 'Subscription']);
    expect(notNodes).toEqual([]);
  });

  it('the plain schema stays free of federation fields and directives', () => {
    const sdl = printedSchema();
    expect(sdl).not.toMatch(/_entities|_service|@key|@link/);
  });
});

describe('the Federation v2 subgraph', () => {
  it('links Federation v2 and keys each entity by id', () => {
    const sdl = printedSubgraph();
    expect(sdl).toMatch(/@link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.\d+"/);
    for (const name of ENTITIES) expect(keysOf(sdl, name), name).toEqual(['id']);
  });

  it('is a valid subgraph for composition', () => {
    expect(validateSubgraph({ name: 'training', typeDefs: parse(printedSubgraph()) }).map((e) => e.message)).toEqual([]);
  });

  it('answers _service { sdl } with the printed subgraph', async () => {
    const res = await graphql({ schema, source: '{ _service { sdl } }', contextValue: {} });
    expect(res.errors).toBeUndefined();
    expect(`${(res.data as { _service: { sdl: string } })._service.sdl}\n`).toBe(readFileSync(SUBGRAPH_FILE, 'utf8'));
  });

  it('serves every type and field of the plain schema, roots included', () => {
    const plain = fieldsByType(plainSchema);
    const served = fieldsByType(schema);
    for (const [name, fields] of plain) {
      const extra = name === 'Query' ? ['_entities', '_service'] : [];
      expect(served.get(name), name).toEqual([...fields, ...extra].sort());
    }
    expect(schema.getMutationType()?.name).toBe(plainSchema.getMutationType()?.name);
    // The subscription root (where one exists) is carried into the subgraph unchanged.
    expect(schema.getSubscriptionType()?.name).toBe(plainSchema.getSubscriptionType()?.name);
  });

  it('lists exactly the five entities in _Entity', () => {
    const entity = schema.getType('_Entity');
    expect(
      entity && 'getTypes' in entity
        ? entity
            .getTypes()
            .map((t) => t.name)
            .sort()
        : [],
    ).toEqual([...ENTITIES].sort());
  });
});
