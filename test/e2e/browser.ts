// Debian's Chromium driven by playwright-core, started the way this machine needs: headless, no
// sandbox (CI runs as root), no GPU, no background networking (the network is closed and
// Chromium's own connections would be refused), and a fresh profile per run.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { AppConfig, ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { DEMO_LEDGER, startDemoProviders, type DemoProvider } from '../../src/simulators/demo.js';
import { memoryDataDir } from '../support/pglite-template.js';
import { startRuntimeOn } from '../support/runtime.js';
import { HANG_MS } from '../support/wait.js';
import { resolveChromium } from './chromium.js';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The fleet view's refresh interval (REFRESH_MS in src/web/fleet-view.ts). */
const FLEET_REFRESH_MS = 10_000;

/**
 * For a page whose timers run on Playwright's clock (page.clock.install() before it loaded): moves
 * that clock past the fleet view's refresh interval, so a refresh that was due later starts now,
 * and reads `probe` in the page. Polled (expect.poll) until the probe shows the refresh landed: a
 * refresh still under way arms its next one only when it ends, so one move may fire nothing. The
 * page's clock gets ahead of the server's by the moves (10 s each), small beside the fleet view's
 * windows (15 minutes for "recent", an hour for waste).
 */
export async function nextFleetRefresh<T>(page: Page, probe: () => T): Promise<T> {
  await page.clock.fastForward(FLEET_REFRESH_MS);
  return page.evaluate(probe);
}

/** Where screenshots go: CI keeps E2E_ARTIFACTS_DIR (.ci/reports/e2e); locally test-results/ (git-ignored). */
export function artifactsDir(): string {
  const dir = path.resolve(process.env.E2E_ARTIFACTS_DIR ?? 'test-results');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = resolveChromium();
  const profile = mkdtempSync(path.join(tmpdir(), 'tg-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: FLAGS,
    viewport: { width: 1200, height: 900 },
  });
  // Every wait ends on its event; its time-out only bounds a hang, as the suite's own waits do
  // (playwright's default of 30 s is less than a busy machine may need for a cold page).
  context.setDefaultTimeout(HANG_MS);
  context.setDefaultNavigationTimeout(HANG_MS);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface DemoServer {
  runtime: Runtime;
  demo: DemoProvider[];
  close(): Promise<void>;
}

export interface DemoServerOptions {
  /** The server's collector (default none: read-through only) and each provider's own `collect` entry. */
  collect?: AppConfig['collect'];
  providerCollect?: (p: ProviderConfig) => ProviderConfig['collect'];
  /** Where the cache lives (default an in-memory PGlite). */
  database?: { databaseUrl: string | null; dataDir: string };
}

/** The embedded demo (all five simulators) polled every second, so live pages move fast. */
export async function startDemoServer(opts: DemoServerOptions = {}): Promise<DemoServer> {
  const workDir = mkdtempSync(path.join(tmpdir(), 'tg-e2e-'));
  const demo = await startDemoProviders({ workDir });
  const providers: ProviderConfig[] = demo.map((d) => {
    const collect = opts.providerCollect?.(d.config);
    return { ...d.config, pollIntervalSeconds: 1, ...(collect ? { collect } : {}) };
  });
  const runtime = await startRuntimeOn(opts.database ?? { databaseUrl: null, dataDir: memoryDataDir() }, providers, {
    // The demo's example price table, as the embedded demo serves it.
    config: { ledger: DEMO_LEDGER, ...(opts.collect ? { collect: opts.collect } : {}) },
    env: Object.assign({}, ...demo.map((d) => d.secrets)),
    shutdownGraceMs: 2000,
  });
  return {
    runtime,
    demo,
    async close() {
      await runtime.close();
      await Promise.all(demo.map((d) => d.close()));
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}
