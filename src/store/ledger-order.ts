// The run search's COST and WASTE orderings as SQL. COST: each job's cost over its life, from the
// price table (the same entry src/domain/ledger.ts priceFor picks: most specific first) and the
// platform's accelerator count, or node count for a CPU-only job. WASTE: held minus used
// accelerator-hours over its life, the fleet's arithmetic over the cached readings. Jobs without
// the figure (no price, no readings, not started, finished without a known end) have no key (they
// come last).
import { sql, type SQL } from 'drizzle-orm';
import { MODEL_PATTERNS, type PriceEntry, priceRank } from '../domain/ledger.js';
import { TERMINAL_STATUSES } from '../domain/types.js';
import * as t from './tables.js';
import { seriesOfWindowsSql, seriesUsageSql } from './utilization-sql.js';

/** The ledger's model name of the job's accelerator type, in SQL (MODEL_PATTERNS as Postgres regexes, case-insensitive). */
function modelSql(): SQL {
  const arms = MODEL_PATTERNS.map(([name, re]) => sql`when ${t.jobs.gpuType} ~* ${re.source} then ${name.toLowerCase()}`);
  return sql`(case ${sql.join(arms, sql` `)} end)`;
}

/** The price per hour that applies to the row, or null: entries in priceFor's order of preference. */
function priceSql(prices: readonly PriceEntry[], cpuOnly: boolean): SQL {
  const entries = prices
    .map((p, i) => ({ p, i }))
    .filter(({ p }) =>
      cpuOnly
        ? p.perNodeHour !== undefined && (p.accelerator === undefined || p.accelerator === '*')
        : p.perAcceleratorHour !== undefined && p.accelerator !== undefined,
    )
    // CPU entries: one without an accelerator outranks "*" (priceFor's rank); stable otherwise.
    .sort((a, b) => rankOf(b.p, cpuOnly) - rankOf(a.p, cpuOnly) || a.i - b.i);
  if (entries.length === 0) return sql`null::float8`;
  const model = modelSql();
  const arms = entries.map(({ p }) => {
    const conds: SQL[] = [];
    if (p.provider !== '*') conds.push(sql`${t.jobs.providerId} = ${p.provider}`);
    if (!cpuOnly && p.accelerator !== '*') {
      const a = p.accelerator!.toLowerCase();
      conds.push(sql`(lower(${t.jobs.gpuType}) = ${a} or ${model} = ${a})`);
    }
    const price = cpuOnly ? p.perNodeHour! : p.perAcceleratorHour!;
    return sql`when ${conds.length ? sql.join(conds, sql` and `) : sql`true`} then ${price}::float8`;
  });
  return sql`(case ${sql.join(arms, sql` `)} end)`;
}

function rankOf(p: PriceEntry, cpuOnly: boolean): number {
  if (!cpuOnly) return priceRank(p);
  return (p.provider === '*' ? 0 : 2) + (p.accelerator === undefined ? 1 : 0);
}

/** The job's cost over its life (to `now` while it runs), in the price table's currency; null when it has none. */
export function costOrderSql(prices: readonly PriceEntry[], now: Date): SQL {
  const nowAt = sql`${now.toISOString()}::timestamptz`;
  const hours = sql`(case when ${t.jobs.status} = 'PENDING' or (${t.jobs.finishedAt} is null and ${t.jobs.status} in ('SUCCEEDED', 'FAILED', 'STOPPED')) then null
    else extract(epoch from (coalesce(${t.jobs.finishedAt}, ${nowAt}) - coalesce(${t.jobs.startedAt}, ${t.jobs.createdAt})))::float8 / 3600 end)`;
  const nodes = sql`(select count(*)::float8 from nodes n where n.job_id = ${t.jobs.id})`;
  return sql`(case when coalesce(${t.jobs.gpuCount}, 0) > 0 then ${t.jobs.gpuCount}::float8 * ${hours} * ${priceSql(prices, false)}
    else nullif(${nodes}, 0) * ${hours} * ${priceSql(prices, true)} end)`;
}

/** How the WASTE order steps a job's life: a default question's rule (ReadThrough.stepRule), so its key is Job.cost's idle hours. */
export interface WasteStep {
  minStepSeconds: number;
  points: number;
}

/**
 * The job's waste over its life (to `now` while it runs), in accelerator-hours: held minus used, by
 * the fleet's own definition (seriesOfWindowsSql / seriesIntervalsSql over the cached readings, as
 * Fleet.ranked(by: WASTE) and the fleet's groups count it). Null, so last, when the job holds
 * nothing yet, ended without a known end, or has no utilization reading in its life: the run search
 * reads the cache and fetches nothing, so no readings there means the waste is not known (the
 * fleet, which fetches first, counts such a job's held hours as idle).
 */
export function wasteOrderSql(now: Date, step: WasteStep): SQL {
  const nowAt = sql`${now.toISOString()}::timestamptz`;
  const ended = sql.raw(`(${[...TERMINAL_STATUSES].map((s) => `'${s}'`).join(', ')})`);
  // jobWindow's life: a start learned from the first metric yields to the creation time.
  const start = sql`coalesce(case when ${t.jobs.startedAtSource} = 'FIRST_METRIC' then ${t.jobs.createdAt} end, ${t.jobs.startedAt}, ${t.jobs.createdAt})`;
  const end = sql`coalesce(${t.jobs.finishedAt}, ${nowAt})`;
  const ms = (x: SQL) => sql`(extract(epoch from ${x}) * 1000)::float8`;
  return sql`(with jw as (
      select ${t.jobs.id} as job_id, w.w_from, w.w_to,
        greatest(${step.minStepSeconds}::float8, ceil((w.w_to - w.w_from) / 1000 / ${step.points}::float8)) * 1000 as asked_step
      from (select ${ms(start)} as w_from, ${ms(end)} as w_to) w
      where ${t.jobs.status} <> 'PENDING' and not (${t.jobs.finishedAt} is null and ${t.jobs.status} in ${ended}) and w.w_to > w.w_from
    ), ${seriesOfWindowsSql(sql`array[${t.jobs.id}]`)},
    per_series as (
      select sel.gpus, sel.w_from, sel.w_to, x.covered_ms, x.used_ms
      from ${seriesUsageSql()}
    )
    select case when coalesce(sum(covered_ms * gpus), 0) > 0
      then (greatest(coalesce(${t.jobs.gpuCount}, 0), sum(gpus)) * max(w_to - w_from) - coalesce(sum(used_ms * gpus), 0)) / 3600000 end
    from per_series)`;
}
