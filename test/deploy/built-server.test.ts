// The image's build steps without Docker (scripts/build-image-root.sh, the Dockerfile's stages as a
// script): the folder it writes is what the image holds in /app, and `node dist/main.js` in it is
// the image's command. Started here for real, on the real Postgres when TEST_DATABASE_URL is set;
// on the PGlite run the same dist/ is started beside the full install (the image has no PGlite).
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';
import { HANG_MS } from '../support/wait.js';

const root = path.resolve(import.meta.dirname, '../..');
// Outside the checkout (packages are looked up in parent folders, and the checkout's own
// node_modules would stand in for what the image lacks); kept between runs, one per checkout: its
// npm ci runs again only when the lockfile or patches change.
const imageRoot = path.join(tmpdir(), `tg-image-root-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);
const scratch = mkdtempSync(path.join(tmpdir(), 'tg-built-'));

/** Servers still running when the file ends (a failed or timed-out test) are killed then. */
const running = new Set<ChildProcess>();

interface Started {
  url: string;
  exited: Promise<{ code: number | null; stderr: string }>;
  stop(): void;
}

/** Starts `node dist/main.js` in `cwd` with only the given settings; resolves once it logs "serving". */
function startBuilt(cwd: string, settings: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd,
    // The default: the demo's collector on. It starts once the server answers and its first sweep
    // holds at most half the database pool (issue 37; a CI rehearsal before that waited 180 s).
    env: {
      PATH: process.env.PATH ?? '',
      HOME: scratch,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATA_DIR: path.join(scratch, 'data'),
      ...settings,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
  running.add(child);
  void exited.then(() => running.delete(child));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'serving') resolve({ url: entry.url!.replace(/\/graphql$/, ''), exited, stop: () => child.kill('SIGTERM') });
    });
    void exited.then(({ code }) => reject(new Error(`dist/main.js exited ${code} before serving: ${stderr}`)));
  });
}

describe('the image root (scripts/build-image-root.sh)', () => {
  let db: TestDatabase | null = null;
  beforeAll(async () => {
    await promisify(execFile)('bash', [path.join(root, 'scripts/build-image-root.sh'), imageRoot], { cwd: root, maxBuffer: 16 << 20 });
  }, 600_000);
  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    await db?.drop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('holds dist/, migrations and a production install without PGlite or build and test tools', () => {
    expect(existsSync(path.join(imageRoot, 'dist/main.js'))).toBe(true);
    const built = readdirSync(path.join(imageRoot, 'dist'), { recursive: true, encoding: 'utf8' });
    expect(built.filter((f) => f.endsWith('.ts'))).toEqual([]);
    for (const asset of ['index.html', 'app.js', 'app.css']) expect(built).toContain(path.join('web', asset));
    expect(readdirSync(path.join(imageRoot, 'migrations')).some((f) => f.endsWith('.sql'))).toBe(true);
    const modules = path.join(imageRoot, 'node_modules');
    for (const present of ['graphql-yoga', 'postgres', 'drizzle-orm', 'patch-package']) expect(existsSync(path.join(modules, present)), present).toBe(true);
    for (const absent of ['@electric-sql/pglite', 'tsx', 'typescript', 'esbuild', 'vitest', 'uplot', 'drizzle-kit'])
      expect(existsSync(path.join(modules, absent)), absent).toBe(false);
  });

  it('without DATABASE_URL, stops with exit code 1 and says the image has no embedded PGlite', async () => {
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: imageRoot,
      env: { PATH: process.env.PATH ?? '', HOME: scratch, PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: path.join(scratch, 'no-pglite') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    running.add(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    running.delete(child);
    expect(code).toBe(1);
    expect(stderr).toContain('embedded PGlite is not installed');
    expect(stderr).toContain('DATABASE_URL');
  }, 180_000);

  it('serves GraphQL, the live view page and /readyz from node dist/main.js, and drains on SIGTERM', async () => {
    let cwd = imageRoot;
    // The request deadline too: this test is about the build, and at load 10 the demo's first
    // Runicorn list (beside the collector's first sweep) passed the default 30 s's field budget
    // (UPSTREAM_TIMEOUT, "ask again").
    const settings: Record<string, string> = { EXECUTION_TIMEOUT_MS: String(HANG_MS) };
    if (REAL_POSTGRES_URL) {
      // Empty: the built server runs its own migrations, from the image's migrations folder.
      db = await createTestDatabase(undefined, { empty: true });
      settings.DATABASE_URL = db.databaseUrl!;
    } else {
      // The same dist/ beside the full install, which has PGlite: the embedded default, built.
      cwd = path.join(scratch, 'embedded');
      mkdirSync(cwd);
      cpSync(path.join(imageRoot, 'dist'), path.join(cwd, 'dist'), { recursive: true });
      cpSync(path.join(imageRoot, 'migrations'), path.join(cwd, 'migrations'), { recursive: true });
      cpSync(path.join(imageRoot, 'package.json'), path.join(cwd, 'package.json'));
      symlinkSync(path.join(root, 'node_modules'), path.join(cwd, 'node_modules'));
    }
    const server = await startBuilt(cwd, settings);
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ providers { id kind simulated } jobs(first: 5) { totalCount } }' }),
      });
      const body = (await res.json()) as { data?: { providers: { kind: string; simulated: boolean }[]; jobs: { totalCount: number } }; errors?: unknown };
      expect(body.errors).toBeUndefined();
      expect(body.data!.providers.map((p) => p.kind).sort()).toEqual(['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN']);
      expect(body.data!.providers.every((p) => p.simulated)).toBe(true);
      expect(body.data!.jobs.totalCount).toBeGreaterThan(0);
      const page = await fetch(`${server.url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('/assets/app.js');
      expect((await fetch(`${server.url}/assets/app.js`)).status).toBe(200);
    } finally {
      server.stop();
    }
    const { code, stderr } = await server.exited;
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // A whole process start (a new PGlite folder is initialised on the PGlite run): seconds when
    // the machine is free, far longer on a shared one.
  }, 180_000);
});
