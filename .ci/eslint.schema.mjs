// The schema lint (.ci/schema-check.ts runs it on schema/schema.graphql): graphql-eslint's
// recommended schema rules and its Relay rules, with a description required on every type,
// field, argument and enum value (each says its unit, default and limit).
import graphqlPlugin from '@graphql-eslint/eslint-plugin';

export default [
  {
    files: ['schema/schema.graphql'],
    languageOptions: { parser: graphqlPlugin.parser, parserOptions: { graphQLConfig: { schema: 'schema/schema.graphql' } } },
    plugins: { '@graphql-eslint': graphqlPlugin },
    rules: {
      ...graphqlPlugin.configs['flat/schema-recommended'].rules,
      ...graphqlPlugin.configs['flat/schema-relay'].rules,
      // Lists of plain objects are fine outside connections (a job's GPUs, a series' points).
      '@graphql-eslint/relay-edge-types': ['error', { withEdgeSuffix: true, shouldImplementNode: true, listTypeCanWrapOnlyEdgeType: false }],
      '@graphql-eslint/strict-id-in-types': [
        'error',
        // Every object type has an id and is a Node (values an id derived from their owner's: see
        // src/domain/value-ids.ts), except the connection plumbing.
        { acceptedIdNames: ['id'], acceptedIdTypes: ['ID'], exceptions: { suffixes: ['Connection', 'Edge', 'PageInfo'] } },
      ],
      // IdleGpu.idleGpuHours: "idle GPU-hours", not a name built from the type's.
      '@graphql-eslint/no-typename-prefix': 'off',
      '@graphql-eslint/require-description': [
        'error',
        {
          types: true,
          rootField: true,
          FieldDefinition: true,
          InputValueDefinition: true,
          EnumValueDefinition: true,
          DirectiveDefinition: true,
          ScalarTypeDefinition: true,
        },
      ],
    },
  },
];
