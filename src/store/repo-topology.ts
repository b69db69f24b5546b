// The nodes and GPUs of jobs: replaced in one statement for any number of jobs, read by job or by id.
import { sql } from 'drizzle-orm';
import { gpuGlobalId, nodeGlobalId } from '../domain/ids.js';
import type { NodeRecord } from '../domain/types.js';
import type { RepoContext } from './repo-context.js';
import type { GpuRow, JobRow, NodeRow } from './repo-types.js';
import { chunks, textArray } from './sql-util.js';
import * as t from './tables.js';

/**
 * Replaces the nodes and GPUs of the given jobs (two statements for any number of jobs up to
 * 10,000 GPUs: the jobs' row locks, then the write). Outside a caller's transaction in one of its
 * own: a collection's transaction holding one job's rows and a query's write of several deadlocked
 * on Postgres, and the query's statement was the victim (an INTERNAL on `jobs` in a CI run's
 * schema/platforms); in a transaction, a victim runs again (RepoContext.transaction).
 */
export async function writeTopology(ctx: RepoContext, providerId: string, entries: { job: JobRow; nodes: NodeRecord[] }[], at: Date): Promise<void> {
  if (entries.length === 0) return;
  if (!ctx.inTransaction) return ctx.transaction((tx) => writeTopology(tx, providerId, entries, at));
  // In job order: two writers of overlapping jobs lock their rows in the same order.
  entries = [...entries].sort((a, b) => (a.job.id < b.job.id ? -1 : a.job.id > b.job.id ? 1 : 0));
  const nodeRows: { id: string; job_id: string; external_id: string; name: string; ord: number }[] = [];
  const gpuRows: { id: string; job_id: string; node_id: string; idx: number; model: string | null; mem: number | null }[] = [];
  const totals: { id: string; gpu_count: number }[] = [];
  for (const { job, nodes } of entries) {
    let total = 0;
    nodes.forEach((n, ord) => {
      const nodeId = nodeGlobalId(providerId, job.externalId, n.externalId);
      nodeRows.push({ id: nodeId, job_id: job.id, external_id: n.externalId, name: n.name, ord });
      for (const g of n.gpus) {
        total++;
        gpuRows.push({
          id: gpuGlobalId(providerId, job.externalId, n.externalId, g.index),
          job_id: job.id,
          node_id: nodeId,
          idx: g.index,
          model: g.model,
          mem: g.memoryTotalBytes,
        });
      }
    });
    totals.push({ id: job.id, gpu_count: total });
    ctx.state.shapes.learnTopology(
      job.id,
      nodes.length,
      total,
      nodes.reduce((m, n) => Math.max(m, n.gpus.length), 0),
    );
  }
  const jobIds = entries.map((e) => e.job.id);
  // The jobs' rows first, in id order, as every topology writer takes them: a writer of the same
  // jobs waits here, and the statement below then sees what it committed. Without it each
  // statement's deletes saw only the rows committed when it began, and two writers of one job
  // with different nodes (a rescheduled pod) both kept theirs: the job had both sets.
  await ctx.db.execute(sql`select 1 from jobs where id = any(${textArray(jobIds)}) order by id for no key update`);
  // One statement of data-modifying CTEs (they touch disjoint rows: the deletes those not in the
  // answer, the upserts those in it), not five: the collector writes a group's topology every
  // sweep, and each statement cost this process 250-300 µs (docs/collection.md). GPU rows past
  // the first 10,000 follow in statements of their own, as before.
  const [first = [], ...rest] = chunks(gpuRows, 10_000);
  await ctx.db.execute(sql`
    with dn as (
      -- Nodes that vanished upstream (a rescheduled pod) are dropped; their series stay, keyed by job.
      delete from nodes where job_id = any(${textArray(jobIds)}) and not (id = any(${textArray(nodeRows.map((n) => n.id))}))
    ), dg as (
      delete from gpus where job_id = any(${textArray(jobIds)}) and not (id = any(${textArray(gpuRows.map((g) => g.id))}))
    ), n as (
      insert into nodes (id, job_id, external_id, name, ord)
      select * from jsonb_to_recordset(${JSON.stringify(nodeRows)}::jsonb) as x(id text, job_id text, external_id text, name text, ord int)
      on conflict (id) do update set name = excluded.name, ord = excluded.ord
    ), g as (
      insert into gpus (id, job_id, node_id, idx, model, memory_total_bytes)
      select * from jsonb_to_recordset(${JSON.stringify(first)}::jsonb)
        as x(id text, job_id text, node_id text, idx int, model text, mem float8)
      on conflict (id) do update set model = excluded.model, memory_total_bytes = excluded.memory_total_bytes
    )
    update jobs set topology_fetched_at = ${at.toISOString()}::timestamptz,
      gpu_count = case when x.gpu_count > 0 then x.gpu_count else jobs.gpu_count end
    from jsonb_to_recordset(${JSON.stringify(totals)}::jsonb) as x(id text, gpu_count int)
    where jobs.id = x.id`);
  for (const part of rest) {
    await ctx.db.execute(sql`
      insert into gpus (id, job_id, node_id, idx, model, memory_total_bytes)
      select * from jsonb_to_recordset(${JSON.stringify(part)}::jsonb)
        as x(id text, job_id text, node_id text, idx int, model text, mem float8)
      on conflict (id) do update set model = excluded.model, memory_total_bytes = excluded.memory_total_bytes`);
  }
}

export async function nodesOfJobs(ctx: RepoContext, jobIds: readonly string[]): Promise<NodeRow[]> {
  if (jobIds.length === 0) return [];
  return ctx.read(() => ctx.reads.nodesOfJobs.execute({ ids: [...jobIds] }));
}

export function nodesByIds(ctx: RepoContext, ids: readonly string[]): Promise<NodeRow[]> {
  return ctx.whereIn(t.nodes, t.nodes.id, ids);
}

export async function gpusOfJobs(ctx: RepoContext, jobIds: readonly string[]): Promise<GpuRow[]> {
  if (jobIds.length === 0) return [];
  return ctx.read(() => ctx.reads.gpusOfJobs.execute({ ids: [...jobIds] }));
}

export function gpusByIds(ctx: RepoContext, ids: readonly string[]): Promise<GpuRow[]> {
  return ctx.whereIn(t.gpus, t.gpus.id, ids);
}
