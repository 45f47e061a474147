import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { hashSecret, issueSecret } from '@gateway/secrets';
import { authenticate } from './authenticate.ts';
import type { ConfigSnapshot, KeyEntry, OrganisationEntry, ProjectEntry } from './config-snapshot.ts';

const key = issueSecret('apiKey');

function snapshotWith(organisation: Partial<OrganisationEntry> = {}, project: Partial<ProjectEntry> = {}) {
  const lookups: string[] = [];
  const keys = new Map<string, KeyEntry>([[key.hash, { keyHash: key.hash, keyId: 'k1', projectId: 'p1' }]]);
  const keysByHash = { get: (hash: string) => { lookups.push(hash); return keys.get(hash); } } as ReadonlyMap<string, KeyEntry>;
  const snapshot: ConfigSnapshot = {
    version: 1n,
    keysByHash,
    projectsById: new Map([['p1', { id: 'p1', organisationId: 'o1', disabled: false, ...project }]]),
    organisationsById: new Map([['o1', { id: 'o1', status: 'active', billingMode: 'commercial', rpmLimit: 1, allowedModelSlugs: new Set<string>(), modelAliases: new Map(), ...organisation }]]),
    modelsBySlug: new Map(),
    platformModelAliases: new Map(),
  };
  return { snapshot, lookups };
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof GatewayError ? error.code : 'not a GatewayError';
  }
}

describe('authenticate', () => {
  it('identifies the key, project and organisation', () => {
    const { snapshot } = snapshotWith();
    expect(authenticate(snapshot, `Bearer ${key.secret}`)).toMatchObject({ keyId: 'k1', project: { id: 'p1' }, organisation: { id: 'o1' } });
  });

  it('looks a key up only by the SHA-256 of what was presented, never by the key itself', () => {
    // What makes the lookup safe to time (see authenticate.ts): only a hash ever reaches the map.
    const { snapshot, lookups } = snapshotWith();
    const other = issueSecret('apiKey');
    authenticate(snapshot, `Bearer ${key.secret}`);
    codeOf(() => authenticate(snapshot, `Bearer ${other.secret}`));
    expect(lookups).toEqual([hashSecret(key.secret), hashSecret(other.secret)]);
    expect(lookups).not.toContain(key.secret);
  });

  it('refuses a missing, non-bearer or malformed key with 401 before any lookup', () => {
    const { snapshot, lookups } = snapshotWith();
    const typo = key.secret.slice(0, 10) + (key.secret[10] === 'a' ? 'b' : 'a') + key.secret.slice(11);
    for (const header of [undefined, `Basic ${key.secret}`, 'Bearer sk-proj-123', `Bearer ${typo}`, `Bearer ${key.secret.slice(0, -1)}`]) {
      expect(codeOf(() => authenticate(snapshot, header)), String(header)).toBe('invalid_api_key');
    }
    expect(lookups).toEqual([]);
  });

  it('refuses an unknown key, a disabled project and a missing organisation alike (401)', () => {
    expect(codeOf(() => authenticate(snapshotWith().snapshot, `Bearer ${issueSecret('apiKey').secret}`))).toBe('invalid_api_key');
    expect(codeOf(() => authenticate(snapshotWith({}, { disabled: true }).snapshot, `Bearer ${key.secret}`))).toBe('invalid_api_key');
    expect(codeOf(() => authenticate(snapshotWith({}, { organisationId: 'gone' }).snapshot, `Bearer ${key.secret}`))).toBe('invalid_api_key');
  });

  it('refuses a suspended organisation with 403', () => {
    expect(codeOf(() => authenticate(snapshotWith({ status: 'suspended' }).snapshot, `Bearer ${key.secret}`))).toBe('organisation_suspended');
  });
});

describe('authenticate, retired keys (the request log)', () => {
  it('refuses a key rotated away exactly as an unknown one, telling only the request log its project, for 7 days', () => {
    const { snapshot } = snapshotWith();
    const retired = issueSecret('apiKey');
    const stale = issueSecret('apiKey');
    const now = Date.now();
    const withRetired: ConfigSnapshot = {
      ...snapshot,
      retiredKeysByHash: new Map([
        [retired.hash, { keyHash: retired.hash, projectId: 'p1', retiredAtMs: now - 60_000 }],
        [stale.hash, { keyHash: stale.hash, projectId: 'p1', retiredAtMs: now - 8 * 24 * 60 * 60 * 1000 }],
      ]),
    };
    const attributed: string[] = [];
    const attribute = (organisationId: string, projectId: string) => attributed.push(`${organisationId}/${projectId}`);
    let refusal: unknown;
    try {
      authenticate(withRetired, `Bearer ${retired.secret}`, attribute);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(GatewayError);
    expect((refusal as GatewayError).code).toBe('invalid_api_key');
    expect((refusal as GatewayError).publicMessage).toBe(new GatewayError('invalid_api_key').publicMessage);
    expect(attributed).toEqual(['o1/p1']);
    // Past the window, or never known: refused with no attribution.
    expect(codeOf(() => authenticate(withRetired, `Bearer ${stale.secret}`, attribute))).toBe('invalid_api_key');
    expect(codeOf(() => authenticate(withRetired, `Bearer ${issueSecret('apiKey').secret}`, attribute))).toBe('invalid_api_key');
    expect(attributed).toEqual(['o1/p1']);
    // A live key is attributed too (and authenticates).
    authenticate(withRetired, `Bearer ${key.secret}`, attribute);
    expect(attributed).toEqual(['o1/p1', 'o1/p1']);
  });
});
