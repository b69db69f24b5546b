// OpenTelemetry tracing, on only when an OTLP endpoint is configured: a span per GraphQL
// operation (use-tracing.ts) and, under it, a span per upstream call to a training platform.
// Spans go to <endpoint>/v1/traces as OTLP/HTTP JSON, batched.
import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { DomainError } from '../domain/errors.js';
import type { ProviderSet } from '../providers/provider-set.js';

export interface TracingOptions {
  /** The collector's base URL, as in OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://otel-collector:4318). */
  endpoint: string;
  serviceName: string;
}

export interface Tracing {
  tracer: Tracer;
  /** Sends the spans still buffered and stops exporting. */
  shutdown(): Promise<void>;
}

export function startTracing(opts: TracingOptions): Tracing {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/+$/, '')}/v1/traces` }))],
  });
  // Registers the AsyncLocalStorage context manager, through which an upstream call's span finds
  // its operation's span as parent. Only the first registration in a process takes; spans are
  // made by this provider's own tracer either way.
  provider.register();
  return {
    tracer: provider.getTracer('training-graph'),
    shutdown: () => provider.shutdown(),
  };
}

/** One CLIENT span per upstream call, child of whatever span is active (the GraphQL operation's, or none for live polls). */
export function traceUpstreamCalls(providers: ProviderSet, tracer: Tracer): void {
  providers.observe(({ providerId, kind }) => {
    const span = tracer.startSpan(`upstream ${kind}`, { kind: SpanKind.CLIENT, attributes: { 'provider.id': providerId, 'provider.kind': kind } });
    return (error) => {
      if (error) {
        span.setAttribute('error.code', error instanceof DomainError ? error.code : 'INTERNAL');
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      span.end();
    };
  });
}
