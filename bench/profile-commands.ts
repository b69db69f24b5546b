// The profiling commands a bench child (a replica, the floor) answers for bench/load-profile.ts,
// over its IPC channel: 'profile-start' / 'profile-stop' (a V8 CPU profile, or with `alloc` a
// sampling allocation profile, of what runs in between, written to `file`), 'heap' (heap used and
// old space in bytes, after a full collection when --expose-gc is on) and 'heap-snapshot'.
import type { Session } from 'node:inspector/promises';

export interface ProfileCommand {
  cmd?: string;
  id?: number;
  file?: string;
  alloc?: boolean;
}

let profiler: Session | null = null;

/** Answers `m` when it is a profiling command (true), else leaves it to the caller (false). */
export function answerProfileCommand(m: ProfileCommand): boolean {
  if (m.cmd === 'heap') {
    (globalThis as { gc?: () => void }).gc?.();
    void import('node:v8').then((v8) => {
      const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
      process.send!({ id: m.id, heapUsed: process.memoryUsage().heapUsed, oldSpaceUsed: old?.space_used_size ?? NaN });
    });
    return true;
  }
  if (m.cmd === 'heap-snapshot') {
    void import('node:v8').then((v8) => process.send!({ id: m.id, file: v8.writeHeapSnapshot(m.file) }));
    return true;
  }
  if (m.cmd === 'profile-start') {
    void (async () => {
      const { Session } = await import('node:inspector/promises');
      const session = new Session();
      profiler = session;
      session.connect();
      if (m.alloc) {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', {
          samplingInterval: 1024,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
      } else {
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 500 });
        await session.post('Profiler.start');
      }
      process.send!({ id: m.id });
    })();
    return true;
  }
  if (m.cmd === 'profile-stop' && profiler) {
    const session = profiler;
    profiler = null;
    void (async () => {
      const { profile } = m.alloc ? await session.post('HeapProfiler.stopSampling') : await session.post('Profiler.stop');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(m.file!, JSON.stringify(profile));
      session.disconnect();
      process.send!({ id: m.id });
    })();
    return true;
  }
  return false;
}
