// Docker cannot run here, so the scale-out topology is checked as text: docker-compose.yml has
// Postgres, Redis and two API replicas built from the Dockerfile behind one port, all health-
// checked; each replica's environment uses the settings docs/configuration.md documents and loadConfig
// accepts; the Dockerfile is multi-stage, non-root and health-checked.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
  configs?: Record<string, { content?: string }>;
};
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
// The settings' reference (moved there from the README, issue 39).
const configurationDoc = readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');

interface Service {
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  command?: string[] | string;
  /** A null value is passed through from the environment of `docker compose up` (unset when it is). */
  environment?: Record<string, string | null>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] | string };
  depends_on?: Record<string, { condition: string }> | string[];
  configs?: { source: string; target: string }[];
}

const services = Object.entries(compose.services);
const apis = services.filter(([, s]) => s.build !== undefined);
const SERVER_SETTINGS = ['PORT', 'HOST', 'DATABASE_URL', 'REDIS_URL', 'PROVIDERS_CONFIG'];

/** Compose's `${NAME:-default}` interpolation and pass-through (a null value) from the given environment. */
const interpolate = (v: string, host: Record<string, string> = {}) =>
  v.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, name: string, fallback) => host[name] || (fallback ?? ''));
function environmentOf(api: Service, host: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(api.environment ?? {})) {
    if (v === null) {
      if (host[k] !== undefined) env[k] = host[k]!;
    } else env[k] = interpolate(String(v), host);
  }
  return env;
}
/** host path -> container path of a service's bind mounts. */
const bindMounts = (api: Service) => (api.volumes ?? []).map((v) => v.split(':')).filter(([source]) => source!.startsWith('.'));

describe('docker-compose.yml', () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'tg-compose-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('has Postgres and Redis with healthchecks', () => {
    const pg = compose.services.postgres!;
    const redis = compose.services.redis!;
    expect(pg.image).toMatch(/^postgres:/);
    expect(JSON.stringify(pg.healthcheck?.test)).toContain('pg_isready');
    expect(redis.image).toMatch(/^redis:/);
    expect(JSON.stringify(redis.healthcheck?.test)).toContain('redis-cli');
  });

  it('runs two identical API replicas from the Dockerfile, after healthy Postgres and Redis', () => {
    expect(apis.map(([name]) => name)).toEqual(['api-1', 'api-2']);
    for (const [, api] of apis) {
      const context = typeof api.build === 'string' ? api.build : api.build!.context;
      expect(context).toBe('.');
      expect(api.ports).toBeUndefined(); // reached only through the gateway
      expect(api.depends_on).toMatchObject({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
      // The image's own command (node dist/main.js) runs unless compose overrides it.
      expect(api.command).toBeUndefined();
    }
    expect(apis[1]![1].environment).toEqual(apis[0]![1].environment);
  });

  it('sets the documented server settings (and only documented variables or provider secrets), pointing at the compose services; loadConfig accepts them', () => {
    const documented = new Set([...configurationDoc.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]!));
    for (const [name, api] of apis) {
      // As the compose file's comment says to start it for real platforms: the files in deploy/,
      // mounted at /config. Here the documented providers example stands in for providers.yaml and
      // the token list starts empty.
      const env = environmentOf(api, { PROVIDERS_CONFIG: '/config/providers.yaml', API_TOKENS_FILE: '/config/tokens.yaml' });
      for (const key of SERVER_SETTINGS) {
        expect(env[key], `${name}.${key}`).toBeDefined();
        expect(documented.has(key), `docs/configuration.md documents ${key}`).toBe(true);
      }
      expect(new URL(env.DATABASE_URL!).hostname).toBe('postgres');
      expect(new URL(env.REDIS_URL!).hostname).toBe('redis');
      expect(env.HOST).toBe('0.0.0.0');

      const example = configurationDoc.match(/```yaml\n([\s\S]*?)```/)![1]!;
      const configMount = bindMounts(api).find(([, target]) => target === '/config');
      expect(configMount, 'deploy/ is mounted at /config').toBeDefined();
      const dir = path.join(tmp, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'providers.yaml'), example);
      writeFileSync(path.join(dir, 'tokens.yaml'), '[]\n');
      const local = { ...env, PROVIDERS_CONFIG: path.join(dir, 'providers.yaml'), API_TOKENS_FILE: path.join(dir, 'tokens.yaml') };
      const config = loadConfig(local);
      expect(config).toMatchObject({ port: 4000, host: '0.0.0.0', databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL });
      // Every secret the providers name is passed through from the host; every other variable is
      // one the environment table of docs/configuration.md documents.
      const secretNames = new Set(
        config.providers!.flatMap((p) =>
          Object.entries(p)
            .filter(([k]) => k.endsWith('Env'))
            .map(([, v]) => String(v)),
        ),
      );
      for (const secret of secretNames) expect(env[secret], `${name} passes ${secret} through`).toBeDefined();
      const undocumented = Object.keys(env).filter((k) => !secretNames.has(k) && !documented.has(k));
      expect(undocumented, 'variables docs/configuration.md does not document').toEqual([]);
    }
  });

  it('starts the demo on a fresh clone: every mounted path is in the repository, no providers file or token is needed', () => {
    for (const [name, s] of services) {
      for (const [source, target] of bindMounts(s)) {
        const local = path.join(root, source!);
        expect(existsSync(local), `${name} mounts ${source} (at ${target}), which a fresh clone must have`).toBe(true);
        // Tracked: a folder git would not ship (ignored or empty) is not on a fresh clone.
        if (statSync(local).isDirectory()) expect(readdirSync(local).some((f) => !f.startsWith('.'))).toBe(true);
      }
    }
    for (const [name, api] of apis) {
      // Nothing set on the host: no providers file (the demo), no token file, and the server's own
      // rule lets the demo serve beyond loopback without tokens (test/security/tenants.test.ts).
      const env = environmentOf(api);
      expect(env.PROVIDERS_CONFIG, `${name} without PROVIDERS_CONFIG runs the demo`).toBeUndefined();
      expect(env.API_TOKENS_FILE).toBeUndefined();
      const config = loadConfig(env);
      expect(config.providers).toBeNull();
      expect(config).toMatchObject({ host: '0.0.0.0', databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL });
      expect(config.security?.tokens.configured).toBe(false);
    }
  });

  it('puts one port in front of both replicas, WebSockets included', () => {
    const published = services.filter(([, s]) => s.ports?.length);
    expect(published.map(([n]) => n)).toEqual(['gateway']);
    const gateway = published[0]![1];
    expect(gateway.ports).toEqual(['4000:4000']);
    const conf = compose.configs![gateway.configs![0]!.source]!.content!;
    const upstream = conf.match(/upstream \w+ \{([^}]*)\}/)![1]!;
    const servers = [...upstream.matchAll(/server ([\w-]+):(\d+);/g)].map((m) => `${m[1]}:${m[2]}`);
    expect(servers).toEqual(apis.map(([name, s]) => `${name}:${s.environment!.PORT}`));
    expect(conf).toMatch(/proxy_set_header Upgrade/);
  });
});

describe('.dockerignore', () => {
  it("keeps the host's installs, data, builds, history and configuration out of the build context", () => {
    const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const entry of ['node_modules', '.data', 'dist', '.git', 'deploy']) expect(ignored, entry).toContain(entry);
    // Nothing the Dockerfile copies is ignored.
    for (const copied of [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '))) {
      expect(
        ignored.some((i) => copied === i || copied.startsWith(`${i}/`)),
        copied,
      ).toBe(false);
    }
  });
});

describe('Dockerfile', () => {
  it('is multi-stage, runs as a non-root user, health-checks /readyz and starts the built dist/main.js', () => {
    expect(dockerfile.match(/^FROM /gm)!.length).toBeGreaterThanOrEqual(2);
    const user = dockerfile.match(/^USER (\S+)/m)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\/readyz/m);
    expect(dockerfile).toMatch(/^EXPOSE 4000$/m);
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/main\.js"\]$/m);
    // Compiled (and the live view page bundled) in a build stage with the dev tools, then copied;
    // the runtime's install leaves out dev and optional dependencies (PGlite): it serves a Postgres.
    expect(dockerfile).toMatch(/^RUN node scripts\/build\.mjs dist$/m);
    expect(dockerfile).toMatch(/^COPY --from=\w+ \/app\/dist \.\/dist$/m);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev --omit=optional /m);
    expect(dockerfile).not.toMatch(/tsx/);
    // scripts/build-image-root.sh runs the same steps where no Docker engine is (built-server.test.ts).
    const script = readFileSync(path.join(root, 'scripts/build-image-root.sh'), 'utf8');
    expect(script).toContain('npm ci --omit=dev --omit=optional');
    expect(script).toContain('scripts/build.mjs');
  });

  it('has the driver patches and the postinstall script in place before every npm ci, and patch-package among production dependencies', () => {
    // Without patches/ patch-package finds nothing to apply and the image would run the unpatched
    // postgres.js, which never reconnects after Postgres restarts (docs/operations.md, "Running in production").
    const stages = dockerfile.split(/^FROM /m).slice(1);
    const installing = stages.filter((s) => /^RUN npm ci/m.test(s));
    expect(installing.length).toBeGreaterThan(0);
    for (const stage of installing) {
      for (const line of [/^COPY patches \.\/patches$/m, /^COPY patches-optional \.\/patches-optional$/m]) {
        const copy = stage.search(line);
        expect(copy).toBeGreaterThan(-1);
        expect(copy).toBeLessThan(stage.search(/^RUN npm ci/m));
      }
      // postinstall runs these scripts: without them npm ci fails.
      const script = stage.search(/^COPY scripts\/apply-patches\.mjs scripts\/pglite-template\.mjs \.\/scripts\/$/m);
      expect(script).toBeGreaterThan(-1);
      expect(script).toBeLessThan(stage.search(/^RUN npm ci/m));
    }
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(pkg.dependencies['patch-package']).toBeDefined();
    expect(pkg.scripts.postinstall).toMatch(/^node scripts\/apply-patches\.mjs && node scripts\/pglite-template\.mjs$/);
    expect(existsSync(path.join(root, 'patches', `postgres+${pkg.dependencies.postgres}.patch`))).toBe(true);
    // Patches of optional dependencies live apart: the deps stage installs without them.
    for (const file of readdirSync(path.join(root, 'patches-optional'))) {
      expect(pkg.optionalDependencies[file.replace(/\+[^+]+\.patch$/, '').replace('+', '/')]).toBeDefined();
    }
  });
});
