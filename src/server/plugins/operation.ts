// What the observability plugins say about an operation: its name, type and request id.
import { getOperationAST, type DocumentNode } from 'graphql';

export interface OperationInfo {
  name: string | null;
  type: 'query' | 'mutation' | 'subscription';
  requestId: string | null;
}

export function operationInfo(args: { document: DocumentNode; operationName?: string | null; contextValue: unknown }): OperationInfo {
  const op = getOperationAST(args.document, args.operationName ?? undefined);
  return { name: args.operationName ?? op?.name?.value ?? null, type: op?.operation ?? 'query', requestId: requestIdOf(args.contextValue) };
}

/** The id the HTTP layer stamped on the request (a Fetch Request over HTTP, the upgrade request over graphql-ws). */
function requestIdOf(context: unknown): string | null {
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
