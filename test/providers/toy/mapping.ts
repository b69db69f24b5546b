// The toy platform's statuses on the common scale.
import type { JobStatus } from '../../../src/domain/types.js';

export const STATUS: Readonly<Record<string, JobStatus>> = { queued: 'PENDING', playing: 'RUNNING', done: 'SUCCEEDED', broken: 'FAILED' };

export function mapStatus(raw: string): JobStatus {
  return Object.hasOwn(STATUS, raw) ? STATUS[raw]! : 'UNKNOWN';
}
