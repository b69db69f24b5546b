// Ids of the schema's values (objects that are not entities: a point, a summary, a freshness, a
// health, a fleet roll-up row). A normalising client cache keys every object it meets by `id`;
// Apollo Client warns when it must replace an id-less list, urql Graphcache warns for every
// id-less object unless told in its `keys` config. Values get an id derived from what they are:
// equal values share it (they are immutable, so sharing one cache entry is harmless), and a
// value that changes is a new one. Values are not Nodes: they are refetched through the entity
// that holds them.
import { createHash } from 'node:crypto';

export const VALUE_ID_DESCRIPTION =
  'Derived from the content of this value (equal values share it), so a normalising cache keys it with no configuration; not a Node id: refetch the object that holds it';

/** `<Type>:<22 base64url characters of a SHA-1 of the parts>`; computed only when `id` is selected. */
export function valueId(typename: string, parts: unknown): string {
  return `${typename}:${createHash('sha1').update(JSON.stringify(parts)).digest('base64url').slice(0, 22)}`;
}
