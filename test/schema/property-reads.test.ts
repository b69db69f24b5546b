// Exposed fields carry no resolver in the served schema (src/schema/index.ts): graphql-jit compiles
// a field without one into a property read, and calls any resolver it is given, Pothos'
// defaultFieldResolver included. A dashboard's points are the case that matters: a million
// MetricPoints, whose timestamp, step and value are read straight off the stored point.
import { defaultFieldResolver, GraphQLObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';

describe('the served schema', () => {
  it('gives no field graphql-js default resolver: exposed fields are property reads', () => {
    const withDefault: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
      for (const field of Object.values(type.getFields())) if (field.resolve === defaultFieldResolver) withDefault.push(`${type.name}.${field.name}`);
    }
    expect(withDefault).toEqual([]);
  });

  it("reads a MetricPoint's timestamp, step and value as properties, and resolves its id", () => {
    const point = schema.getType('MetricPoint') as GraphQLObjectType;
    const fields = point.getFields();
    expect([fields.timestamp!.resolve, fields.step!.resolve, fields.value!.resolve]).toEqual([undefined, undefined, undefined]);
    expect(typeof fields.id!.resolve).toBe('function');
  });
});
