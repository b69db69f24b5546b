// A span per GraphQL operation ("query Fleet", "subscription U"), active while it executes so the
// upstream calls it causes become its children. For a subscription the span covers its set-up.
// An incoming W3C `traceparent` (and `tracestate`) header continues the caller's trace: the
// operation's span is the child of the caller's span, not the root of a new trace.
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import type { Plugin } from 'graphql-yoga';
import { hasErrors, isAsyncIterable, operationInfo, type OperationInfo } from './operation.js';

// startTracing registers the SDK's default propagator, W3C Trace Context (+ baggage).
const headerGetter: TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};

/** The caller's span context from `traceparent`, or the active context when there is none (or it is malformed). */
function parentContext(contextValue: unknown): Context {
  const headers = (contextValue as { request?: { headers?: Headers } } | undefined)?.request?.headers;
  if (!headers?.get('traceparent')) return context.active();
  const extracted = propagation.extract(ROOT_CONTEXT, headers, headerGetter);
  return trace.getSpanContext(extracted) ? extracted : context.active();
}

function startOperationSpan(tracer: Tracer, info: OperationInfo, parent: Context): Span {
  return tracer.startSpan(
    `${info.type} ${info.name ?? 'anonymous'}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'graphql.operation.type': info.type,
        ...(info.name ? { 'graphql.operation.name': info.name } : {}),
        ...(info.requestId ? { 'http.request.id': info.requestId } : {}),
      },
    },
    parent,
  );
}

function endOperationSpan(span: Span, result: unknown) {
  if (!isAsyncIterable(result) && hasErrors(result)) {
    const codes = (result as { errors: { extensions?: { code?: unknown } }[] }).errors.map((e) => String(e.extensions?.code ?? 'INTERNAL'));
    span.setAttribute('graphql.error.codes', [...new Set(codes)]);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

export function useTracing(tracer: Tracer): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const parent = parentContext(args.contextValue);
      const span = startOperationSpan(tracer, operationInfo(args), parent);
      setExecuteFn((a) => context.with(trace.setSpan(parent, span), () => executeFn(a)));
      return { onExecuteDone: ({ result }) => endOperationSpan(span, result) };
    },
    onSubscribe({ args, subscribeFn, setSubscribeFn }) {
      const parent = parentContext(args.contextValue);
      const span = startOperationSpan(tracer, operationInfo(args), parent);
      setSubscribeFn((a) => context.with(trace.setSpan(parent, span), () => subscribeFn(a)));
      return {
        onSubscribeResult: ({ result }) => endOperationSpan(span, result),
        onSubscribeError: () => {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
  };
}
