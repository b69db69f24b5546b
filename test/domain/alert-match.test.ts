// The one matching rule routes, silences and Finding.silencedBy share: every condition given must
// hold, labels must equal the job's, a silence holds only while in force and within its creator's scope.
import { describe, expect, it } from 'vitest';
import { findingMatches, silences, type MatchedFinding } from '../../src/domain/alert-match.js';

const f: MatchedFinding = {
  kind: 'STALLED',
  severity: 'CRITICAL',
  providerId: 'bt',
  projectId: 'bt:project:llm',
  jobId: 'bt:job:run-1',
  owner: 'alice',
  labels: { team: 'llm', tier: null },
};
const T = new Date(Date.UTC(2026, 10, 20, 12));
const at = (minutes: number) => new Date(T.getTime() + minutes * 60_000);

describe('alert matchers', () => {
  it('hold when every condition given holds', () => {
    expect(findingMatches({}, f)).toBe(true);
    expect(findingMatches({ kinds: ['STALLED', 'FAILED'], severities: ['CRITICAL'], owners: ['alice'], labels: [{ name: 'team', value: 'llm' }] }, f)).toBe(
      true,
    );
    expect(findingMatches({ kinds: ['STRAGGLER'] }, f)).toBe(false);
    expect(findingMatches({ owners: ['bob'] }, f)).toBe(false);
    expect(findingMatches({ owners: ['alice'] }, { ...f, owner: null })).toBe(false);
    expect(findingMatches({ labels: [{ name: 'team', value: 'eval' }] }, f)).toBe(false);
    expect(findingMatches({ labels: [{ name: 'team', value: 'llm' }] }, { ...f, labels: null })).toBe(false);
    expect(findingMatches({ projectIds: ['bt:project:llm'], jobIds: ['bt:job:run-2'] }, f)).toBe(false);
  });

  it('a silence holds while in force, within its creator scope', () => {
    const s = { matchers: { kinds: ['STALLED'] }, scope: null, startsAt: at(0), endsAt: at(60) };
    expect(silences(s, f, at(0))).toBe(true);
    expect(silences(s, f, at(-1))).toBe(false);
    expect(silences(s, f, at(60))).toBe(false);
    expect(silences({ ...s, scope: { providers: ['other'], projects: null } }, f, at(1))).toBe(false);
    expect(silences({ ...s, scope: { providers: ['bt'], projects: ['bt:project:eval'] } }, f, at(1))).toBe(false);
    expect(silences({ ...s, scope: { providers: ['bt'], projects: ['bt:project:llm'] } }, f, at(1))).toBe(true);
  });
});
