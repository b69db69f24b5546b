// Which failures mean "the cache database cannot be reached" (CACHE_UNAVAILABLE, retry shortly) and
// which stay faults: real errors from the real drivers, not hand-made look-alikes.
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { openDatabase } from '../../src/store/db.js';
import { clientFacingError, isDatabaseUnavailable } from '../../src/store/unavailable.js';
import { freePort } from '../support/net.js';
import { memoryDataDir } from '../support/pglite-template.js';

async function failureOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('expected the work to fail');
}

describe('isDatabaseUnavailable', () => {
  it('is true for a Postgres that refuses connections, raw and as drizzle wraps it', async () => {
    const url = `postgres://postgres@127.0.0.1:${await freePort()}/nothing`;
    const client = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
    try {
      const raw = await failureOf(() => client`select 1`);
      expect(isDatabaseUnavailable(raw)).toBe(true);
      const wrapped = await failureOf(() => drizzle(client).execute(sql`select 1`));
      expect((wrapped as Error).cause).toBeDefined();
      expect(isDatabaseUnavailable(wrapped)).toBe(true);
      expect(clientFacingError(wrapped)).toMatchObject({ code: 'CACHE_UNAVAILABLE', details: { retryable: true } });
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it('is false for a statement the database rejects, and for domain errors', async () => {
    const database = await openDatabase({ dataDir: memoryDataDir() });
    try {
      const bad = await failureOf(() => database.db.execute(sql`select * from no_such_table`));
      expect(isDatabaseUnavailable(bad)).toBe(false);
      expect(clientFacingError(bad)).toBeNull();
    } finally {
      await database.close();
    }
    const domain = new DomainError('NOT_FOUND', 'no such job');
    expect(isDatabaseUnavailable(domain)).toBe(false);
    expect(clientFacingError(domain)).toBe(domain);
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
  });
});
