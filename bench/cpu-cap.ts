// A CPU limit for one bench process, the way a container's CPU limit is made (Linux cgroups, the
// cpu controller: v1's cfs quota or v2's cpu.max). The load bench gives each replica the same
// limit, as pods of their own would have, so "two replicas against one" asks whether the work
// scales out rather than whether this small machine has cores left beside wrk and PostgreSQL.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** 20 ms: short enough that a capped replica is throttled in small steps, not for 100 ms at a time. */
const PERIOD_US = 20_000;

export interface CpuCap {
  /** The file a process writes its pid into to join (`cgroup.procs`). */
  procsFile: string;
  cores: number;
  remove(): void;
}

/** The cgroup2 mount point where the cpu controller can be enabled for children, or null. */
function cgroup2Root(): string | null {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right?.startsWith('cgroup2 ')) continue;
    const mount = left!.split(' ')[4]!;
    if (readFileSync(path.join(mount, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu')) return mount;
  }
  return null;
}

/**
 * A new cgroup named `name` limited to `cores` CPUs, or a reason why none can be made here (not
 * Linux, no cpu controller, not allowed to write it): the caller then runs without a limit and says so.
 */
export function createCpuCap(name: string, cores: number): CpuCap | { error: string } {
  const quota = Math.round(cores * PERIOD_US);
  try {
    const v1 = '/sys/fs/cgroup/cpu';
    if (existsSync(path.join(v1, 'cpu.cfs_quota_us'))) {
      const dir = path.join(v1, name);
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quota));
      return { procsFile: path.join(dir, 'cgroup.procs'), cores, remove: () => removeGroup(dir) };
    }
    const root = cgroup2Root();
    if (!root) return { error: 'no cgroup cpu controller on this machine' };
    writeFileSync(path.join(root, 'cgroup.subtree_control'), '+cpu');
    const dir = path.join(root, name);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
    return { procsFile: path.join(dir, 'cgroup.procs'), cores, remove: () => removeGroup(dir) };
  } catch (e) {
    return { error: `cannot make a cgroup (${(e as Error).message})` };
  }
}

/** Joins the calling process (all its threads) to a cap made by createCpuCap. */
export function joinCpuCap(procsFile: string): void {
  writeFileSync(procsFile, String(process.pid));
}

/** A cgroup can be removed once its processes have exited. */
function removeGroup(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Still populated (a process did not exit): left for the machine's owner; harmless.
  }
}
