// A bad providers file is refused with a message naming the key; the process exits with it.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseProvidersFile } from '../../src/config/index.js';
import { HANG_MS } from '../support/wait.js';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'tg-config-'));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('providers file', () => {
  it('accepts every documented kind', () => {
    const providers = parseProvidersFile(
      `providers:
  - { id: baseten-prod, kind: BASETEN, baseUrl: https://api.baseten.co, apiKeyEnv: BASETEN_API_KEY, pollIntervalSeconds: 30 }
  - { id: hw-bj4, kind: MODELARTS, baseUrl: https://modelarts.cn-north-4.myhuaweicloud.com, projectId: 0a1b2c, accessKeyIdEnv: HW_AK, secretAccessKeyEnv: HW_SK }
  - { id: hw-iam, kind: MODELARTS, baseUrl: https://modelarts.cn-north-4.myhuaweicloud.com, projectId: 0a1b2c, iamUrl: https://iam.cn-north-4.myhuaweicloud.com, domainName: acme, usernameEnv: HW_USER, passwordEnv: HW_PASS }
  - { id: ali-hz, kind: PAI_DLC, baseUrl: https://pai-dlc.cn-hangzhou.aliyuncs.com, regionId: cn-hangzhou, workspaceId: "12345", accessKeyIdEnv: ALI_AK, secretAccessKeyEnv: ALI_SK }
  - { id: lens, kind: PRIMUS_LENS, baseUrl: https://safe.example.com/lens, cluster: mi300-a, tokenEnv: LENS_TOKEN }
  - { id: local-runs, kind: RUNICORN, baseUrl: "http://127.0.0.1:23300" }
  - { id: local-disk, kind: RUNICORN, storageDir: /home/user/.runicorn }
`,
      'providers.yaml',
    );
    expect(providers.map((p) => p.kind)).toEqual(['BASETEN', 'MODELARTS', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN', 'RUNICORN']);
  });

  const bad: [string, string, RegExp][] = [
    ['a missing key', `providers:\n  - { id: b, kind: BASETEN, baseUrl: "https://x.example" }\n`, /providers\[0\]\.apiKeyEnv/],
    ['an unknown kind', `providers:\n  - { id: b, kind: SAGEMAKER, baseUrl: "https://x.example" }\n`, /providers\[0\]\.kind/],
    ['an unknown key', `providers:\n  - { id: b, kind: BASETEN, apiKeyEnv: K, apiKey: "secret" }\n`, /providers\[0\].*apiKey/],
    ['a bad id', `providers:\n  - { id: "Bad Id", kind: BASETEN, apiKeyEnv: K }\n`, /providers\[0\]\.id/],
    ['duplicate ids', `providers:\n  - { id: b, kind: BASETEN, apiKeyEnv: K }\n  - { id: b, kind: BASETEN, apiKeyEnv: K }\n`, /providers\[1\]\.id: duplicate/],
    ['both Runicorn modes', `providers:\n  - { id: r, kind: RUNICORN, baseUrl: "http://127.0.0.1:1", storageDir: /x }\n`, /providers\[0\]\.baseUrl/],
    ['no ModelArts credentials', `providers:\n  - { id: m, kind: MODELARTS, baseUrl: "https://x.example", projectId: p }\n`, /providers\[0\]\.accessKeyIdEnv/],
    ['YAML that does not parse', `providers: [ {`, /not valid YAML/],
  ];
  for (const [what, text, message] of bad) {
    it(`refuses ${what}, naming the key`, () => {
      expect(() => parseProvidersFile(text, 'providers.yaml')).toThrow(ConfigError);
      expect(() => parseProvidersFile(text, 'providers.yaml')).toThrow(message);
    });
  }

  it('refuses bad environment settings', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/environment\.PORT/);
    expect(() => loadConfig({ PROVIDERS_CONFIG: '/no/such/file.yaml' })).toThrow(/PROVIDERS_CONFIG: cannot read/);
  });

  it('makes the process exit with a message that names the key', async () => {
    const p = file('bad.yaml', `providers:\n  - { id: b, kind: BASETEN, baseUrl: "https://x.example" }\n`);
    const err = await run(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...process.env, PROVIDERS_CONFIG: p, PORT: '0' },
      timeout: HANG_MS,
    }).catch((e) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toMatch(/providers\[0\]\.apiKeyEnv/);
  });

  it('makes the process exit naming a provider secret that is not set, without starting', async () => {
    const p = file('nosecret.yaml', `providers:\n  - { id: b, kind: BASETEN, apiKeyEnv: TG_TEST_UNSET_KEY }\n`);
    const env: NodeJS.ProcessEnv = { ...process.env, PROVIDERS_CONFIG: p, PORT: '0' };
    delete env.TG_TEST_UNSET_KEY;
    const err = await run(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env,
      timeout: HANG_MS,
    }).catch((e) => e);
    expect(err.code).not.toBe(0);
    expect(err.stderr).toMatch(/TG_TEST_UNSET_KEY is not set/);
  });
});
