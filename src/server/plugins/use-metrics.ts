// Counts every GraphQL operation (HTTP and graphql-ws both run through the envelop) and times
// queries and mutations; logs each at debug level with its request id.
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import { hasErrors, isAsyncIterable, operationInfo, operationKind, requestIdOf } from './operation.js';

export function useMetrics(metrics: Metrics, logger: Logger): Plugin {
  return {
    onExecute({ args }) {
      const kind = operationKind(args.document, args.operationName);
      const series = metrics.seriesOf(kind);
      const started = performance.now();
      return {
        onExecuteDone({ result }) {
          const seconds = (performance.now() - started) / 1000;
          // An incremental (@defer/@stream) result is counted when its first part is ready.
          const failed = !isAsyncIterable(result) && hasErrors(result);
          (failed ? series.error : series.ok).n++;
          metrics.operationDuration.observe(series.duration, seconds);
          if (logger.isLevelEnabled('debug')) {
            logger.debug(
              { reqId: requestIdOf(args.contextValue), operation: kind.name, type: kind.type, ms: Math.round(seconds * 1000), failed },
              'graphql operation',
            );
          }
        },
      };
    },
    onSubscribe({ args }) {
      const info = operationInfo(args);
      const labels = { operation: metrics.operationLabel(info.name), type: 'subscription' };
      return {
        onSubscribeResult({ result }) {
          metrics.operations.inc({ ...labels, outcome: isAsyncIterable(result) || !hasErrors(result) ? 'ok' : 'error' });
          logger.debug({ reqId: info.requestId, operation: info.name, type: 'subscription' }, 'graphql subscription');
        },
        onSubscribeError() {
          metrics.operations.inc({ ...labels, outcome: 'error' });
        },
      };
    },
  };
}
