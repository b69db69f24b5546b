// Entry point: read the configuration, start the server, stop cleanly on SIGINT/SIGTERM.
import { ConfigError, loadConfig } from './config/index.js';
import { startRuntime } from './server/runtime.js';

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
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
