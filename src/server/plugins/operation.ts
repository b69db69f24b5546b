// What the observability plugins say about an operation: its name, type and request id.
import { getOperationAST, type DocumentNode } from 'graphql';

export interface OperationInfo {
  name: string | null;
  type: 'query' | 'mutation' | 'subscription';
  requestId: string | null;
}

/** An operation's name and type, found once per parsed document (yoga's parse cache hands the same one back) and operation name. */
export interface OperationKind {
  name: string | null;
  type: 'query' | 'mutation' | 'subscription';
}

const kinds = new WeakMap<DocumentNode, Map<string | null, OperationKind>>();

export function operationKind(document: DocumentNode, operationName?: string | null): OperationKind {
  let byName = kinds.get(document);
  if (!byName) kinds.set(document, (byName = new Map()));
  const key = operationName ?? null;
  let kind = byName.get(key);
  if (!kind) {
    const op = getOperationAST(document, operationName ?? undefined);
    kind = { name: operationName ?? op?.name?.value ?? null, type: op?.operation ?? 'query' };
    // A client may send any number of names with one document: only the first few are kept.
    if (byName.size < 16) byName.set(key, kind);
  }
  return kind;
}

export function operationInfo(args: { document: DocumentNode; operationName?: string | null; contextValue: unknown }): OperationInfo {
  const { name, type } = operationKind(args.document, args.operationName);
  return { name, type, requestId: requestIdOf(args.contextValue) };
}

/** The id the HTTP layer stamped on the request (a Fetch Request over HTTP, the upgrade request over graphql-ws). */
export function requestIdOf(context: unknown): string | null {
  const c = context as { request?: { headers?: { get?(name: string): string | null } }; req?: { headers?: Record<string, unknown> } };
  const fromFetch = typeof c?.request?.headers?.get === 'function' ? c.request.headers.get('x-request-id') : null;
  const fromNode = c?.req?.headers?.['x-request-id'];
  return fromFetch ?? (typeof fromNode === 'string' ? fromNode : null);
}

export function hasErrors(result: unknown): boolean {
  return Array.isArray((result as { errors?: unknown[] } | null)?.errors) && (result as { errors: unknown[] }).errors.length > 0;
}

export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}
