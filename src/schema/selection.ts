// What a field's selection asks for, read from the query document: lets a resolver skip work for
// sub-fields nobody selected (a series' points carry what their ids need only when `id` is asked).
import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether the selection of the field being resolved names `field` directly (through fragments and
 * inline fragments too; @skip/@include are not evaluated, so it may answer true for a skipped one).
 */
export function selectsField(info: GraphQLResolveInfo, field: string): boolean {
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode | undefined): boolean => {
    if (!set) return false;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        if (sel.name.value === field) return true;
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        if (walk(sel.selectionSet)) return true;
      } else if (!seen.has(sel.name.value)) {
        seen.add(sel.name.value);
        if (walk(info.fragments[sel.name.value]?.selectionSet)) return true;
      }
    }
    return false;
  };
  return info.fieldNodes.some((node) => walk(node.selectionSet));
}
