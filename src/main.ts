// Entry point: read the configuration, start the server, stop cleanly on SIGINT/SIGTERM.
import { ConfigError, loadConfig } from './config/index.js';

async function main() {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error:\n${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  // The server's modules load once the configuration holds: a mistyped key or an unset secret is
  // reported in a fraction of a second, not after the 2-3 s (from the sources) that loading the
  // whole server takes.
  const { startRuntime } = await import('./server/runtime.js');
  const runtime = await startRuntime({ config });
  let stopping = false;
  const stop = async (signal: string) => {
    // A second signal while draining means "now": an operator or orchestrator lost patience.
    if (stopping) process.exit(1);
    stopping = true;
    runtime.logger.info({ signal }, 'shutting down: draining requests, closing subscriptions');
    try {
      await runtime.close();
      runtime.logger.info('stopped');
      process.exit(0);
    } catch (err) {
      runtime.logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  // Requests cannot get here (routes.ts answers their failures); what does is a bug outside any request.
  // A promise nobody awaited failed: logged loudly, the server keeps serving (Node's default would
  // end it, and every client with it, for one forgotten catch).
  process.on('unhandledRejection', (reason) => runtime.logger.error({ err: reason }, 'unhandled promise rejection (a bug: a failure nobody awaited)'));
  // A synchronous throw outside any request leaves the process in an unknown state: logged, then the
  // process ends so the orchestrator starts a clean one.
  process.on('uncaughtException', (err) => {
    runtime.logger.fatal({ err }, 'uncaught exception: stopping');
    process.exit(1);
  });
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
