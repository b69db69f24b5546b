// The import boundaries of biome.json (issue 39) refuse what they are meant to: each fenced folder
// gets a probe file with a wrong import and one with a right one, in a temporary copy of the
// repository's own biome.json, and Biome's CLI must report exactly the wrong ones, each with its
// rule's message. A rule that stopped matching (a renamed folder, a glob that matches nothing)
// fails here instead of letting the import through in silence.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIOME = path.join(ROOT, 'node_modules/.bin/biome');

interface Probe {
  /** Where the probe file sits, relative to the repository root. */
  file: string;
  /** The module it imports. */
  from: string;
  /** A fragment of the rule's message when the import must be refused; null when it must pass. */
  refused: string | null;
  /** `await import(...)` instead of a static import (doctor/ starts the demo so). */
  dynamic?: boolean;
}

const PROBES: Probe[] = [
  // The five fences from before.
  { file: 'src/schema/probe-wrong.ts', from: '../store/repository.js', refused: 'schema/ reaches the store only through its door' },
  { file: 'src/schema/probe-right.ts', from: '../store/index.js', refused: null },
  { file: 'src/live/probe-wrong.ts', from: '../schema/index.js', refused: 'live/ imports only' },
  { file: 'src/promql/probe-wrong.ts', from: '../live/hub.js', refused: 'promql/ imports only' },
  { file: 'src/collect/probe-wrong.ts', from: '../store/read-through.js', refused: 'collect/ reaches the store only through its door' },
  { file: 'src/providers/probe-wrong.ts', from: '../store/index.js', refused: 'providers/ know nothing of the store' },
  { file: 'src/simulators/probe-wrong.ts', from: '../providers/registry.js', refused: 'simulators/ share no code' },
  { file: 'src/domain/probe-wrong.ts', from: '../store/index.js', refused: 'domain/ is plain types and rules' },
  // server/: the doors only, from any depth.
  { file: 'src/server/probe-store.ts', from: '../store/read-through.js', refused: 'server/ reaches the store through its door' },
  { file: 'src/server/probe-live.ts', from: '../live/hub.js', refused: 'server/ reaches the live feeds through their door' },
  { file: 'src/server/probe-schema.ts', from: '../schema/context.js', refused: 'server/ reaches the schema through its door' },
  { file: 'src/server/probe-config.ts', from: '../config/security.js', refused: "server/ reads settings through config/'s door" },
  { file: 'src/server/probe-web.ts', from: '../web/build.js', refused: 'server/ serves the live page through its door' },
  { file: 'src/server/probe-platform.ts', from: '../providers/baseten/adapter.js', refused: "a platform's own files stay private" },
  { file: 'src/server/probe-simulator.ts', from: '../simulators/demo.js', refused: 'server/ starts the demo' },
  { file: 'src/server/probe-alerts.ts', from: '../alerts/deliverer.js', refused: 'server/ starts alert delivery through its door' },
  { file: 'src/server/plugins/probe-store.ts', from: '../../store/unavailable.js', refused: 'server/ reaches the store through its door' },
  { file: 'src/server/probe-doors.ts', from: '../store/index.js', refused: null },
  { file: 'src/server/probe-live-door.ts', from: '../live/index.js', refused: null },
  { file: 'src/server/plugins/probe-schema-door.ts', from: '../../schema/index.js', refused: null },
  // server/runtime.ts, the wiring: the store's parts, and nothing deeper.
  { file: 'src/server/runtime.ts', from: '../store/repository.js', refused: null },
  { file: 'src/server/runtime.ts', from: '../store/fleet.js', refused: 'server/runtime.ts builds the store from its door plus' },
  { file: 'src/server/runtime.ts', from: '../simulators/baseten/server.js', refused: 'server/runtime.ts starts the demo through' },
  // store/: nothing above it.
  { file: 'src/store/probe-schema.ts', from: '../schema/index.js', refused: 'store/ sits below the graph' },
  { file: 'src/store/probe-live.ts', from: '../live/index.js', refused: 'store/ sits below the graph' },
  { file: 'src/store/probe-server.ts', from: '../server/runtime.js', refused: 'store/ sits below the graph' },
  { file: 'src/store/probe-platform.ts', from: '../providers/pai-dlc/client.js', refused: "never a platform's own files" },
  { file: 'src/store/probe-right.ts', from: '../config/index.js', refused: null },
  // findings/: the store and the live feeds through their doors.
  { file: 'src/findings/probe-store.ts', from: '../store/repository.js', refused: 'findings/ reaches the live feeds only through' },
  { file: 'src/findings/probe-live.ts', from: '../live/hub.js', refused: 'findings/ reaches the live feeds only through' },
  { file: 'src/findings/probe-schema.ts', from: '../schema/index.js', refused: 'findings/ imports only' },
  { file: 'src/findings/probe-right.ts', from: '../store/index.js', refused: null },
  // alerts/: the store, the live timers and the settings through their doors.
  { file: 'src/alerts/probe-store.ts', from: '../store/alerts.js', refused: 'alerts/ reaches the store only through' },
  { file: 'src/alerts/probe-config.ts', from: '../config/alerts-config.js', refused: 'alerts/ reaches the store only through' },
  { file: 'src/alerts/probe-findings.ts', from: '../findings/index.js', refused: 'alerts/ imports only' },
  { file: 'src/alerts/probe-schema.ts', from: '../schema/index.js', refused: 'alerts/ imports only' },
  { file: 'src/alerts/probe-right.ts', from: '../store/index.js', refused: null },
  // lease/: the store's and the live timers' doors, none of the loop's users; they reach it through its door.
  { file: 'src/lease/probe-store.ts', from: '../store/repository.js', refused: "lease/ reaches the lease statements only through the store's door" },
  { file: 'src/lease/probe-collect.ts', from: '../collect/index.js', refused: 'lease/ is the loop its users run their work in' },
  { file: 'src/lease/probe-right.ts', from: '../store/index.js', refused: null },
  { file: 'src/lease/probe-live.ts', from: '../live/index.js', refused: null },
  { file: 'src/findings/probe-lease.ts', from: '../lease/loop.js', refused: 'findings/ imports only' },
  { file: 'src/alerts/probe-lease.ts', from: '../lease/loop.js', refused: 'alerts/ imports only' },
  { file: 'src/collect/probe-lease.ts', from: '../lease/loop.js', refused: 'collect/ imports only' },
  { file: 'src/collect/probe-lease-door.ts', from: '../lease/index.js', refused: null },
  { file: 'src/store/probe-lease.ts', from: '../lease/index.js', refused: 'store/ sits below the graph' },
  // config/: domain/ only.
  { file: 'src/config/probe-store.ts', from: '../store/lookup-budget.js', refused: 'config/ reads settings' },
  { file: 'src/config/probe-schema.ts', from: '../schema/index.js', refused: 'config/ reads settings' },
  { file: 'src/config/probe-right.ts', from: '../domain/ids.js', refused: null },
  { file: 'src/config/probe-platforms.ts', from: '../providers/platforms.js', refused: null },
  { file: 'src/config/probe-adapter.ts', from: '../providers/baseten/adapter.js', refused: 'config/ reads settings' },
  // doctor/: config/ and the providers, as the server calls them; the demo through its starter.
  { file: 'src/doctor/probe-store.ts', from: '../store/index.js', refused: 'doctor/ checks the platforms' },
  {
    file: 'src/doctor/probe-platform.ts',
    from: '../providers/modelarts/signer.js',
    refused: "doctor/ reaches a platform through providers/' top-level modules",
  },
  { file: 'src/doctor/probe-simulator.ts', from: '../simulators/runicorn/server.js', refused: 'doctor/ starts the demo' },
  { file: 'src/doctor/probe-right.ts', from: '../simulators/demo.js', refused: null, dynamic: true },
  { file: 'src/doctor/probe-dynamic.ts', from: '../server/runtime.js', refused: 'doctor/ checks the platforms', dynamic: true },
  // web/: a client of the API, nothing of the server's layers.
  { file: 'src/web/probe-schema.ts', from: '../schema/index.js', refused: 'web/ is the browser' },
  { file: 'src/web/probe-store.ts', from: '../store/index.js', refused: 'web/ is the browser' },
  { file: 'src/web/probe-config.ts', from: '../config/install.js', refused: "config/'s door" },
];

interface Diagnostic {
  category: string;
  message: string;
  location: { path: string; start: { line: number } };
}

describe('Biome import boundaries', () => {
  let dir: string;
  let diagnostics: Diagnostic[];

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tg-fences-'));
    // The repository's own rules; without git around the copy, Biome must not look for one.
    const config = JSON.parse(readFileSync(path.join(ROOT, 'biome.json'), 'utf8'));
    config.vcs = { enabled: false };
    writeFileSync(path.join(dir, 'biome.json'), JSON.stringify(config));
    // One import per line, so a file can hold several probes: line n is the file's n-th probe.
    for (const file of new Set(PROBES.map((p) => p.file))) {
      const probes = PROBES.filter((p) => p.file === file);
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      const imports = probes.map((p, i) => (p.dynamic ? `const p${i} = await import('${p.from}');` : `import { probe as p${i} } from '${p.from}';`));
      writeFileSync(path.join(dir, file), `${imports.join('\n')}\n\nexport const used = [${probes.map((_, i) => `p${i}`).join(', ')}];\n`);
    }
    let out: string;
    try {
      out = execFileSync(BIOME, ['lint', '--reporter=json', '--max-diagnostics=none', 'src'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      // Exit code 1 is the expected outcome: some probes are errors.
      out = String((e as { stdout?: string }).stdout ?? '');
    }
    diagnostics = (JSON.parse(out) as { diagnostics: Diagnostic[] }).diagnostics;
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('Biome read every probe', () => {
    // A probe Biome never linted would pass every "allowed" case below for the wrong reason.
    expect(diagnostics.filter((d) => d.category !== 'lint/style/noRestrictedImports')).toEqual([]);
  });

  it.each(PROBES.map((p) => [p.file, p.from, p] as const))('%s importing %s', (_file, _from, p) => {
    const line = PROBES.filter((q) => q.file === p.file).indexOf(p) + 1;
    const found = diagnostics
      .filter((d) => d.location.path === p.file && d.location.start.line === line && d.category === 'lint/style/noRestrictedImports')
      .map((d) => d.message);
    if (p.refused === null) expect(found).toEqual([]);
    else expect(found.join('\n')).toContain(p.refused);
  });

  it('every fenced folder has a refused probe', () => {
    const overrides = (JSON.parse(readFileSync(path.join(ROOT, 'biome.json'), 'utf8')) as { overrides: { includes: string[]; linter?: any }[] }).overrides;
    const fenced = overrides
      .filter((o) => o.linter?.rules?.style?.noRestrictedImports)
      .flatMap((o) => o.includes.filter((i) => !i.startsWith('!')).map((i) => i.replace(/\/\*\*$/, '')));
    expect(fenced.length).toBeGreaterThanOrEqual(9);
    for (const folder of fenced) {
      expect(
        PROBES.some((p) => p.refused !== null && (p.file.startsWith(`${folder}/`) || p.file === folder)),
        `${folder} has no probe`,
      ).toBe(true);
    }
  });
});

describe('domain/ loads nothing of the app at run time', () => {
  it('its one reach outside, the list of platform modules, is a type-only import or export', () => {
    // biome.json lets domain/ name providers/platforms.js so ProviderKind is read off the modules;
    // a value import there would load every adapter with the domain, so it must stay type-only.
    const dir = path.join(ROOT, 'src/domain');
    const outside = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) =>
        readFileSync(path.join(dir, f), 'utf8')
          .split('\n')
          .filter((l) => /from '\.\.\/(?!domain\/)/.test(l))
          .map((l) => `${f}: ${l.trim()}`),
      );
    expect(outside.length).toBeGreaterThan(0);
    for (const line of outside) expect(line).toMatch(/: (import|export) type \{[^}]*\} from '\.\.\/providers\/platforms\.js'/);
  });
});
