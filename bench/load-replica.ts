// One API replica for the load bench, in its own process (or N behind one port through
// node:cluster, the way a process manager runs replicas on one host): the same runtime as
// `npm start`, pinned to the simulator's clock so warm data stays warm while it is measured.
import cluster from 'node:cluster';
import { pino } from 'pino';
import { loadSecurityConfig } from '../src/config/security.js';
import { startRuntime } from '../src/server/runtime.js';
import { joinCpuCap } from './cpu-cap.js';
import { answerProfileCommand, type ProfileCommand } from './profile-commands.js';

export interface ReplicaOptions {
  port: number;
  workers: number;
  databaseUrl: string | null;
  dataDir: string;
  simUrl: string;
  apiKey: string;
  anchorMs: number;
  /** One cgroup per serving process (bench/cpu-cap.ts): process i joins cpuCaps[i]. */
  cpuCaps?: string[];
  /** DATABASE_POOL_SIZE of each serving process; unset: the server's default. */
  poolSize?: number;
}

const opts = JSON.parse(process.argv[2]!) as ReplicaOptions;
/** CPU time (user + system) this process has used: the cost per request on a busy machine. */
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

if (cluster.isPrimary && opts.workers > 1) {
  let ready = 0;
  for (let i = 0; i < opts.workers; i++) cluster.fork();
  cluster.on('message', (_w, m: { ready?: boolean }) => {
    if (m.ready && ++ready === opts.workers) process.send!({ ready: true });
  });
  cluster.on('exit', (_w, code) => {
    if (code) process.exit(code);
  });
  // CPU time of the whole group (the primary and every worker), so two replicas' cost per
  // request is measured as one replica's is.
  let cpuSeq = 0;
  const workerCpu = (w: import('node:cluster').Worker) =>
    new Promise<number>((resolve) => {
      const id = ++cpuSeq;
      const on = (r: { id?: number; cpuUs?: number }) => r.id === id && (w.off('message', on), resolve(r.cpuUs ?? 0));
      w.on('message', on);
      w.send({ cmd: 'cpu', id });
    });
  process.on('message', (m: { cmd?: string; id?: number }) => {
    if (m.cmd === 'cpu') {
      const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
      void Promise.all(workers.map(workerCpu)).then((each) => process.send!({ id: m.id, cpuUs: cpuUs() + each.reduce((a, b) => a + b, 0) }));
      return;
    }
    if (m.cmd !== 'close') return;
    for (const w of Object.values(cluster.workers ?? {})) w?.send({ cmd: 'close' });
    let left = opts.workers;
    cluster.on('exit', () => --left === 0 && process.exit(0));
  });
} else {
  // Each serving process under its own CPU limit, as a pod of its own; the primary only hands
  // connections over, as a load balancer in front of pods would.
  const cap = opts.cpuCaps?.[cluster.isWorker ? cluster.worker!.id - 1 : 0];
  if (cap) joinCpuCap(cap);
  const runtime = await startRuntime({
    config: {
      port: opts.port,
      host: '127.0.0.1',
      databaseUrl: opts.databaseUrl,
      databasePoolSize: opts.poolSize,
      dataDir: opts.dataDir,
      redisUrl: null,
      logLevel: 'silent',
      providers: [{ id: 'bt', kind: 'BASETEN', baseUrl: opts.simUrl, apiKeyEnv: 'BT_KEY', timeoutSeconds: 120 }],
      security: loadSecurityConfig({}),
    },
    env: { BT_KEY: opts.apiKey },
    logger: pino({ level: 'silent' }),
    clock: () => opts.anchorMs,
  });
  process.send!({ ready: true, url: runtime.url });
  process.on('message', (m: ProfileCommand) => {
    if (m.cmd === 'close') void runtime.close().then(() => process.exit(0));
    if (m.cmd === 'cpu') process.send!({ id: m.id, cpuUs: cpuUs() });
    answerProfileCommand(m);
  });
}
