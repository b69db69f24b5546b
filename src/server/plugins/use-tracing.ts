// A span per GraphQL operation ("query Fleet", "subscription U"), active while it executes so the
// upstream calls it causes become its children. For a subscription the span covers its set-up.
import { context, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { Plugin } from 'graphql-yoga';
import { hasErrors, isAsyncIterable, operationInfo, type OperationInfo } from './operation.js';

function startOperationSpan(tracer: Tracer, info: OperationInfo): Span {
  return tracer.startSpan(`${info.type} ${info.name ?? 'anonymous'}`, {
    kind: SpanKind.SERVER,
    attributes: {
      'graphql.operation.type': info.type,
      ...(info.name ? { 'graphql.operation.name': info.name } : {}),
      ...(info.requestId ? { 'http.request.id': info.requestId } : {}),
    },
  });
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
      const span = startOperationSpan(tracer, operationInfo(args));
      setExecuteFn((a) => context.with(trace.setSpan(context.active(), span), () => executeFn(a)));
      return { onExecuteDone: ({ result }) => endOperationSpan(span, result) };
    },
    onSubscribe({ args, subscribeFn, setSubscribeFn }) {
      const span = startOperationSpan(tracer, operationInfo(args));
      setSubscribeFn((a) => context.with(trace.setSpan(context.active(), span), () => subscribeFn(a)));
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
