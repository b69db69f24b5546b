// The embedded demo's price table (the `ledger` entry a providers file would carry), so a newcomer
// sees Cost, Energy and Efficiency filled in. Illustrative figures for simulated platforms, not any
// platform's list price: a real deployment writes its own contract prices (docs/ledger.md).
import type { LedgerConfig } from '../config/index.js';

export const DEMO_LEDGER: LedgerConfig = {
  prices: [
    { provider: 'baseten-demo', accelerator: 'H100', perAcceleratorHour: 4.0, currency: 'USD' },
    { provider: 'baseten-demo', accelerator: 'H200', perAcceleratorHour: 5.0, currency: 'USD' },
    { provider: 'baseten-demo', accelerator: 'A100', perAcceleratorHour: 2.5, currency: 'USD' },
    { provider: 'baseten-demo', accelerator: 'A10G', perAcceleratorHour: 1.2, currency: 'USD' },
    { provider: 'modelarts-demo', accelerator: 'A100', perAcceleratorHour: 2.4, currency: 'USD' },
    { provider: 'modelarts-demo', accelerator: 'V100', perAcceleratorHour: 1.1, currency: 'USD' },
    { provider: 'modelarts-demo', accelerator: 'T4', perAcceleratorHour: 0.5, currency: 'USD' },
    { provider: 'modelarts-demo', accelerator: 'P100', perAcceleratorHour: 0.7, currency: 'USD' },
    { provider: 'modelarts-demo', accelerator: 'Ascend 910B', perAcceleratorHour: 1.8, currency: 'USD' },
    { provider: 'modelarts-demo', perNodeHour: 0.4, currency: 'USD' },
    { provider: 'pai-dlc-demo', accelerator: 'A100', perAcceleratorHour: 2.4, currency: 'USD' },
    { provider: 'pai-dlc-demo', accelerator: 'H800', perAcceleratorHour: 3.5, currency: 'USD' },
    { provider: 'pai-dlc-demo', accelerator: 'V100', perAcceleratorHour: 1.1, currency: 'USD' },
    { provider: 'pai-dlc-demo', accelerator: 'A10', perAcceleratorHour: 0.9, currency: 'USD' },
    { provider: 'pai-dlc-demo', accelerator: 'T4', perAcceleratorHour: 0.5, currency: 'USD' },
    { provider: 'pai-dlc-demo', perNodeHour: 0.4, currency: 'USD' },
    { provider: 'primus-lens-demo', accelerator: 'MI300X', perAcceleratorHour: 2.8, currency: 'USD' },
    { provider: 'primus-lens-demo', accelerator: 'MI325X', perAcceleratorHour: 3.2, currency: 'USD' },
    { provider: 'runicorn-demo', perNodeHour: 0.2, currency: 'USD' },
  ],
  // Rough mean draws under training load, for the hours a platform reports no power for.
  averagePowerWatts: { A100: 300, H100: 550, H200: 550, H800: 550, V100: 250, P100: 200, A10: 120, A10G: 120, T4: 60, 'Ascend 910B': 300 },
  peakTflops: {},
  precision: 'BF16',
};
