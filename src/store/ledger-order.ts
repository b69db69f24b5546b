// The run search's COST ordering: each job's cost over its life as SQL, from the price table
// (the same entry src/domain/ledger.ts priceFor picks: most specific first) and the platform's
// accelerator count, or node count for a CPU-only job. Jobs without a price, not started, or
// finished without a known end have no key (they come last).
import { sql, type SQL } from 'drizzle-orm';
import { MODEL_PATTERNS, type PriceEntry, priceRank } from '../domain/ledger.js';
import * as t from './tables.js';

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
