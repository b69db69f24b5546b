// `npm run doctor`: with PROVIDERS_CONFIG, checks those platforms; without it, the embedded demo's
// simulated platforms, as `npm start` would use them. Exit code 1 when any route fails, 2 when
// the configuration itself is refused (as `npm start` refuses it).
import { ConfigError, loadConfig } from '../config/index.js';
import { formatReport, runDoctor } from './run.js';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(`configuration error:\n${err.message}`);
  process.exit(2);
}
const demo = config.providers ? [] : await (await import('../simulators/demo.js')).startDemoProviders({});
try {
  const configs = config.providers ?? demo.map((d) => d.config);
  const env = config.providers ? process.env : Object.assign({}, ...demo.map((d) => d.secrets));
  const { reports, exitCode } = await runDoctor(configs, env);
  process.stdout.write(`${formatReport(reports)}\n`);
  process.exitCode = exitCode;
} finally {
  await Promise.all(demo.map((d) => d.close()));
}
