// The providers file's `alerts` entry: the documented example (docs/findings.md) is read as
// written, and a bad entry is refused naming the key; receivers' secrets come from the environment.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigFile, receiverSettings } from '../../src/config/index.js';
import { routesOf } from '../../src/alerts/index.js';

const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/findings.md'), 'utf8');
const yamlBlocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
const base = 'providers:\n  - { id: b, kind: BASETEN, apiKeyEnv: K }\n';

describe('the alerts entry of the providers file', () => {
  it("reads the README's short example as written (with a provider beside it)", () => {
    const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const example = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('alerts:'));
    expect(example).toBeDefined();
    const { alerts } = parseConfigFile(base + example!, 'providers.yaml');
    expect(alerts!.receivers.map((r) => [r.name, r.type])).toEqual([
      ['oncall', 'webhook'],
      ['llm-team', 'slack'],
    ]);
    const routes = routesOf(alerts);
    expect(routes[1]!.matchers).toMatchObject({ kinds: ['STRAGGLER', 'IDLE_ALLOCATION'], owners: ['alice'] });
    expect(
      receiverSettings(alerts!, { ONCALL_HOOK_URL: 'https://hooks.example.com/a', SLACK_LLM_WEBHOOK_URL: 'https://hooks.slack.com/services/T/B/x' }),
    ).toHaveLength(2);
  });

  it("reads docs/findings.md's example as written", () => {
    const example = yamlBlocks.find((b) => b.includes('alerts:'));
    expect(example).toBeDefined();
    const { alerts } = parseConfigFile(example!, 'providers.yaml');
    expect(alerts!.receivers.map((r) => [r.name, r.type])).toEqual([
      ['oncall', 'webhook'],
      ['llm-team', 'slack'],
    ]);
    const routes = routesOf(alerts);
    expect(routes[0]).toEqual({
      receivers: ['oncall'],
      continue: true,
      matchers: { kinds: undefined, severities: ['CRITICAL'], providerIds: undefined, projectIds: undefined, owners: undefined, labels: [] },
    });
    expect(routes[1]!.matchers.labels).toEqual([{ name: 'team', value: 'llm' }]);
    const receivers = receiverSettings(alerts!, {
      ONCALL_HOOK_TOKEN: 'oncall-token-0123456789',
      SLACK_LLM_WEBHOOK_URL: 'https://hooks.slack.com/services/T/B/x',
    });
    expect(receivers).toEqual([
      {
        name: 'oncall',
        type: 'webhook',
        url: 'https://alerts.example.com/training-graph',
        headers: { authorization: 'Bearer oncall-token-0123456789' },
        sendResolved: true,
        timeoutMs: 10_000,
      },
      { name: 'llm-team', type: 'slack', url: 'https://hooks.slack.com/services/T/B/x', headers: {}, sendResolved: false, timeoutMs: 5_000 },
    ]);
    expect(() => receiverSettings(alerts!, {})).toThrow('alerts receiver "oncall": environment variable ONCALL_HOOK_TOKEN is not set');
  });

  it.each([
    [
      'a route to an unknown receiver',
      'alerts:\n  receivers: []\n  routes: [{ receivers: [nobody] }]\n',
      'alerts.routes[0].receivers[0]: no receiver named "nobody"',
    ],
    [
      'a webhook with both url and urlEnv',
      'alerts:\n  receivers: [{ name: a, type: webhook, url: "https://x.example", urlEnv: U }]\n  routes: []\n',
      'alerts.receivers[0].url: give exactly one of "url" or "urlEnv"',
    ],
    [
      'Slack with its URL in the file',
      'alerts:\n  receivers: [{ name: s, type: slack, url: "https://hooks.slack.com/x" }]\n  routes: []\n',
      'alerts.receivers[0]',
    ],
    [
      'two receivers of one name',
      'alerts:\n  receivers: [{ name: a, type: slack, urlEnv: A }, { name: a, type: slack, urlEnv: B }]\n  routes: []\n',
      'alerts.receivers[1].name: duplicate receiver "a"',
    ],
    ['an unknown kind', 'alerts:\n  receivers: []\n  routes: [{ receivers: [], match: { kinds: [HUNG] } }]\n', 'alerts.routes[0].match.kinds[0]'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parseConfigFile(base + text, 'providers.yaml')).toThrow(ConfigError);
    expect(() => parseConfigFile(base + text, 'providers.yaml')).toThrow(message);
  });
});
