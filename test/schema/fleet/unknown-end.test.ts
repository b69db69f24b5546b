// A finished job whose platform's job list gives no end time (Primus-Lens' list has none) is a
// fleet problem with a code of its own, UNKNOWN_END, not INTERNAL (issue 44, item 10).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/server/runtime.js';
import { loadSecurityConfig } from '../../../src/config/security.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { postGraphql, startRuntimeOn } from '../../support/runtime.js';

describe('a fleet with finished jobs of unknown end', () => {
  let rt: Runtime;
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    // A cold 30-day fleet of the whole demo reads every platform first: on a busy machine's PGlite
    // that passed the 30 s default, and this test is about the problem's code, not its speed.
    rt = await startRuntimeOn(db, null, { config: { security: loadSecurityConfig({ EXECUTION_TIMEOUT_MS: '600000' }) } });
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  it('names each as an UNKNOWN_END problem, not INTERNAL', async () => {
    const to = new Date();
    const from = new Date(to.getTime() - 30 * 86_400_000);
    const res = await postGraphql(
      rt.url,
      `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to) { problems { code message job { id status finishedAt } } } }`,
      {
        from: from.toISOString(),
        to: to.toISOString(),
      },
    );
    expect(res.errors).toBeUndefined();
    const problems = res.data.fleet.problems as { code: string; message: string; job: { id: string; status: string; finishedAt: string | null } }[];
    expect(problems.map((p) => p.code)).not.toContain('INTERNAL');
    const unknownEnd = problems.filter((p) => p.code === 'UNKNOWN_END');
    expect(unknownEnd.length).toBeGreaterThan(0);
    for (const p of unknownEnd) {
      expect(p.job.status).toMatch(/SUCCEEDED|FAILED|CANCELLED|STOPPED/);
      expect(p.message).toMatch(/does not say when/);
    }
  }, 600_000);
});
