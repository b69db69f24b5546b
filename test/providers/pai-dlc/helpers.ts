// Shared set-up for the PAI-DLC tests: an adapter pointed at a running simulator, and a raw
// V3-signed request for the cases the adapter never produces (stale dates, replays, tampering).
import { createHash, createHmac, randomUUID } from 'node:crypto';
import type { PaiDlcConfig } from '../../../src/providers/pai-dlc/index.js';
import { createPaiDlcAdapter } from '../../../src/providers/pai-dlc/adapter.js';
import type { JobRef } from '../../../src/domain/types.js';
import type { PaiDlcSimulator, SimJob } from '../../../src/simulators/pai-dlc/index.js';

export function adapterFor(sim: PaiDlcSimulator, overrides: Partial<PaiDlcConfig> = {}, secret = sim.accessKeySecret) {
  const config: PaiDlcConfig = {
    id: 'pai-test',
    kind: 'PAI_DLC',
    baseUrl: sim.url,
    regionId: sim.regionId,
    accountId: sim.fleet.accountId,
    accessKeyIdEnv: 'ALI_AK',
    secretAccessKeyEnv: 'ALI_SK',
    timeoutSeconds: 5,
    ...overrides,
  };
  return createPaiDlcAdapter(config, { ALI_AK: sim.accessKeyId, ALI_SK: secret });
}

export const signal = () => new AbortController().signal;

/** The simulator's job of that display name (the fleet names each one). */
export const jobNamed = (sim: PaiDlcSimulator, name: string): SimJob => sim.fleet.jobs.find((j) => j.DisplayName === name)!;

/** What the store hands the adapter for a simulated job, as if it were running. */
export const refOf = (job: SimJob): JobRef => ({
  externalId: job.JobId,
  projectExternalId: job.workspace.WorkspaceId,
  status: 'RUNNING',
  createdAt: new Date(job.createdMs),
  startedAt: job.runningMs === null ? null : new Date(job.runningMs),
  finishedAt: job.finishedMs === null ? null : new Date(job.finishedMs),
});

const enc = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export interface RawSignedRequest {
  path: string;
  query: Record<string, string>;
  action: string;
  date?: Date;
  nonce?: string;
  secret?: string;
  accessKeyId?: string;
}

/**
 * Signs by the fact sheet's recipe, written out a third time here so a test can build exactly the
 * request it wants; returns the URL and the headers to send.
 */
export function rawSigned(sim: PaiDlcSimulator, req: RawSignedRequest): { url: string; headers: Record<string, string> } {
  const host = new URL(sim.url).host;
  const sorted = Object.keys(req.query).sort();
  const qs = sorted.map((k) => `${enc(k)}=${enc(req.query[k]!)}`).join('&');
  const headers: Record<string, string> = {
    host,
    'x-acs-action': req.action,
    'x-acs-version': '2020-12-03',
    'x-acs-date': (req.date ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    'x-acs-signature-nonce': req.nonce ?? randomUUID(),
    'x-acs-content-sha256': createHash('sha256').update('').digest('hex'),
  };
  const names = Object.keys(headers).sort();
  const canonical = ['GET', req.path, qs, names.map((n) => `${n}:${headers[n]}\n`).join(''), names.join(';'), headers['x-acs-content-sha256']].join('\n');
  const toSign = `ACS3-HMAC-SHA256\n${createHash('sha256').update(canonical).digest('hex')}`;
  const sig = createHmac('sha256', req.secret ?? sim.accessKeySecret)
    .update(toSign)
    .digest('hex');
  const { host: _host, ...sent } = headers;
  return {
    url: `${sim.url}${req.path}${qs ? `?${qs}` : ''}`,
    headers: {
      ...sent,
      accept: 'application/json',
      authorization: `ACS3-HMAC-SHA256 Credential=${req.accessKeyId ?? sim.accessKeyId},SignedHeaders=${names.join(';')},Signature=${sig}`,
    },
  };
}
