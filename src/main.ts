// Entry point: read the configuration, start the server, stop cleanly on SIGINT/SIGTERM.
import { ConfigError, loadConfig } from './config/index.js';
import { startRuntime } from './server/runtime.js';

async function main() {
  let config;
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
  const stop = async (signal: string) => {
    runtime.logger.info({ signal }, 'shutting down');
    await runtime.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
