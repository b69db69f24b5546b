// Demo starter: writes a Runicorn storage folder (one run keeps training while the demo runs) and
// serves it in storage mode. Storage mode, not the viewer, because the 0.6.0 viewer never serves
// summary.json, so only the folder gives a run's target step and with it progress and ETA. The
// viewer simulator over the same folder is exercised by the adapter's tests.
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DemoStarter } from '../demo-starter.js';
import { writeDemoFleet } from './fleet.js';

export const startRunicornDemo: DemoStarter<'RUNICORN'> = async (opts) => {
  const now = opts.now ?? Date.now;
  const ownsDir = !opts.workDir;
  const base = opts.workDir ?? mkdtempSync(join(tmpdir(), 'runicorn-demo-'));
  const storageDir = join(base, 'runicorn-storage');
  // A fresh folder each start: the fleet is rewritten from the seed, never appended to.
  rmSync(storageDir, { recursive: true, force: true });
  mkdirSync(storageDir, { recursive: true });
  const host = hostname();
  const fleet = writeDemoFleet({ storageDir, hostname: host, livePid: process.pid, nowMs: now(), anchorMs: opts.anchorMs });
  const ticker = setInterval(() => fleet.advance(now()), 1000);
  ticker.unref();
  return {
    config: { id: 'runicorn-demo', kind: 'RUNICORN', name: 'Runicorn (simulated)', storageDir },
    secrets: {},
    close: async () => {
      clearInterval(ticker);
      if (ownsDir) rmSync(base, { recursive: true, force: true });
    },
  };
};
