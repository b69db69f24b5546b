// The store's prepared reads (src/store/sql-util.ts, rowsOfPrepared): on PostgreSQL named
// statements of the extended protocol, on PGlite an SQL PREPARE once per database and text and an
// EXECUTE with the values as literals. They answer as the plain statement does, whatever the
// values hold (a quote, a null, an instant); reads of one text at once share its preparation (the
// second PREPARE of a name fails, and failed the first dashboard of a fresh PGlite server once);
// and a transaction's read finds what the database prepared.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/store/db.js';
import { rowsOf, rowsOfPrepared } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';

const suite = useTestRepository();
const embedded = () => !process.env.TEST_DATABASE_URL;

// Instants travel as ISO text, as the store's own statements pass them.
const probe = (text: string, n: number | null, at: string, flag: boolean) =>
  sql`select ${text}::text as text, ${n}::int as n, ${at}::timestamptz as at, ${flag}::boolean as flag, length(${text}::text) as len`;

describe('prepared reads', () => {
  it('answer as the plain statement does, with quotes, nulls, instants and booleans among the values', async () => {
    const at = new Date(Date.UTC(2026, 10, 30, 12, 0, 0, 123)).toISOString();
    for (const [text, n, flag] of [
      ["it's a ''quoted'' value; drop table points; --", 7, true],
      ['\\ backslash and \n a newline', null, false],
      ['', -1, true],
    ] as const) {
      const plain = await rowsOf(suite.db.db, probe(text, n, at, flag));
      const prepared = await rowsOfPrepared(suite.db.db, probe(text, n, at, flag));
      expect(prepared).toEqual(plain);
      expect(prepared[0]).toMatchObject({ text, n, flag });
    }
    const [points] = await rowsOf<{ n: number | string }>(suite.db.db, sql`select count(*) as n from pg_tables where tablename = 'points'`);
    expect(Number(points!.n)).toBe(1);
  });

  it('share one preparation when reads of one text run at once', async () => {
    const read = (i: number) => rowsOfPrepared<{ v: number }>(suite.db.db, sql`select ${i}::int * 2 as v, 'shared text' as tag`);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => read(i)));
    expect(answers.map((rows) => rows[0]!.v)).toEqual([0, 2, 4, 6, 8, 10, 12, 14]);
    if (embedded()) {
      const [held] = await rowsOf<{ n: number | string }>(
        suite.db.db,
        sql`select count(*) as n from pg_prepared_statements where name like 'store_%' and statement like '%shared text%'`,
      );
      expect(Number(held!.n)).toBe(1);
    }
  });

  it("run in a transaction, on the statement the database prepared or on one of the transaction's own", async () => {
    const read = (db: Db, i: number) => rowsOfPrepared<{ v: number }>(db, sql`select ${i}::int + 1 as v, 'in a transaction' as tag`);
    expect((await read(suite.db.db, 1))[0]!.v).toBe(2);
    const inside = await suite.db.db.transaction(async (tx) => {
      const a = await read(tx as unknown as Db, 2);
      const b = await rowsOfPrepared<{ v: number }>(tx as unknown as Db, sql`select ${3}::int + 1 as v, 'first in a transaction' as tag`);
      return [a[0]!.v, b[0]!.v];
    });
    expect(inside).toEqual([3, 4]);
    expect((await rowsOfPrepared<{ v: number }>(suite.db.db, sql`select ${5}::int + 1 as v, 'first in a transaction' as tag`))[0]!.v).toBe(6);
  });
});
