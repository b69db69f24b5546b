// What a field's selection asks for, read from the query document: lets a resolver skip work for
// sub-fields nobody selected (a series' points carry what their ids need only when `id` is asked).
import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether `ok` holds for every field of `set`, through fragments and inline fragments (each named
 * fragment walked once per `seen`; a fragment the document lacks fails). `ok` may walk a field's
 * own selection with everyField again. @skip/@include are not evaluated.
 */
export function everyField(
  info: Pick<GraphQLResolveInfo, 'fragments'>,
  set: SelectionSetNode | undefined,
  ok: (field: FieldNode) => boolean,
  seen: Set<string> = new Set(),
): boolean {
  if (!set) return true;
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      if (!ok(sel)) return false;
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      if (!everyField(info, sel.selectionSet, ok, seen)) return false;
    } else {
      // A fragment is on one type, so it meets one test wherever it is spread: once is enough
      // (a false answer has already returned).
      if (seen.has(sel.name.value)) continue;
      seen.add(sel.name.value);
      const fragment = info.fragments[sel.name.value];
      if (!fragment || !everyField(info, fragment.selectionSet, ok, seen)) return false;
    }
  }
  return true;
}

/**
 * Whether the selection of the field being resolved names `field` directly (through fragments and
 * inline fragments too; @skip/@include are not evaluated, so it may answer true for a skipped one).
 */
export function selectsField(info: GraphQLResolveInfo, field: string): boolean {
  const seen = new Set<string>();
  return info.fieldNodes.some((node) => !everyField(info, node.selectionSet, (f) => f.name.value !== field, seen));
}
