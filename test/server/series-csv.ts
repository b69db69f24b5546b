// Reads a series CSV export as a client does: the series table (comment lines, CSV after "# "),
// then one short row per point naming its series.
import { parse as parseCsv } from 'csv-parse/sync';

export function readSeriesCsv(text: string): { table: Record<string, string>[]; rows: Record<string, string>[] } {
  const table = parseCsv(
    text
      .split('\n')
      .filter((l) => l.startsWith('# '))
      .map((l) => l.slice(2))
      .join('\n'),
    { columns: true },
  ) as Record<string, string>[];
  const rows = parseCsv(text, { columns: true, comment: '#', skip_empty_lines: true }) as Record<string, string>[];
  return { table, rows };
}
