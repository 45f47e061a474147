import { describe, expect, it } from 'vitest';
import { configV1 } from '@gateway/contracts';
import { applyConfigUpdate, type LiveConfigSnapshot } from './config-snapshot.ts';

const options = { supportsProviderKind: (kind: string) => kind === 'openai_compatible' };
const hashA = 'a'.repeat(64);
const hashB = 'b'.repeat(64);

function model(slug: string, overrides: Partial<configV1.GatewayModel> = {}): configV1.GatewayModel {
  return configV1.GatewayModel.fromPartial({
    slug, defaultMaxTokens: 16, maxContextTokens: 1024, inputPriceMicrosPerMtok: 1n, outputPriceMicrosPerMtok: 2n, createdAtS: 5n,
    upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-x', apiKey: 'k' },
    ...overrides,
  });
}

function full(version: bigint, parts: Partial<configV1.ConfigUpdate> = {}): configV1.ConfigUpdate {
  return configV1.ConfigUpdate.fromPartial({
    version, full: true,
    organisations: [{ id: 'o1', status: configV1.OrganisationStatus.ORGANISATION_STATUS_ACTIVE, billingMode: configV1.BillingMode.BILLING_MODE_COMMERCIAL, rpmLimit: 5, allowedGatewayModelSlugs: ['m1'] }],
    projects: [{ id: 'p1', organisationId: 'o1' }],
    apiKeys: [{ keyHash: hashA.toUpperCase(), keyId: 'k1', projectId: 'p1' }],
    gatewayModels: [model('m1')],
    ...parts,
  });
}

function applied(current: LiveConfigSnapshot | undefined, update: configV1.ConfigUpdate) {
  const result = applyConfigUpdate(current, update, options);
  if (!result.ok) throw new Error(result.reason);
  return result;
}

describe('applyConfigUpdate', () => {
  it('builds a snapshot from a full update, keyed for lookups, with key hashes lower-cased', () => {
    const { snapshot, problems } = applied(undefined, full(3n));
    expect(problems).toEqual([]);
    expect(snapshot.version).toBe(3n);
    expect(snapshot.keysByHash.get(hashA)).toEqual({ keyHash: hashA, keyId: 'k1', projectId: 'p1' });
    expect(snapshot.organisationsById.get('o1')).toMatchObject({ status: 'active', billingMode: 'commercial', rpmLimit: 5 });
    expect(snapshot.organisationsById.get('o1')!.allowedModelSlugs.has('m1')).toBe(true);
    expect(snapshot.modelsBySlug.get('m1')).toMatchObject({ createdAtS: 5, outputPriceMicrosPerMtok: 2n });
  });

  it('applies a delta in place: removals and upserts change the held maps, nothing else is rebuilt', () => {
    const first = applied(undefined, full(1n, {
      projects: [{ id: 'p1', organisationId: 'o1', disabled: false }, { id: 'p2', organisationId: 'o1', disabled: false }],
      apiKeys: [{ keyHash: hashA, keyId: 'k1', projectId: 'p1' }, { keyHash: 'c'.repeat(64), keyId: 'k3', projectId: 'p2' }],
    })).snapshot;
    const untouched = {
      maps: [first.keysByHash, first.projectsById, first.organisationsById, first.modelsBySlug],
      key: first.keysByHash.get('c'.repeat(64)), project: first.projectsById.get('p2'), organisation: first.organisationsById.get('o1'),
    };
    const { snapshot, changed } = applied(first, configV1.ConfigUpdate.fromPartial({
      version: 2n, removedKeyHashes: [hashA.toUpperCase()], apiKeys: [{ keyHash: hashB, keyId: 'k2', projectId: 'p1' }], removedGatewayModelSlugs: ['m1'],
    }));
    expect(changed).toBe(true);
    expect(snapshot).toBe(first);
    expect(snapshot.version).toBe(2n);
    expect([...snapshot.keysByHash.keys()].sort()).toEqual([hashB, 'c'.repeat(64)]);
    expect(snapshot.modelsBySlug.size).toBe(0);
    // The same maps, and the very same entry objects for everything the delta did not name.
    expect(snapshot.keysByHash.get('c'.repeat(64))).toBe(untouched.key);
    expect(snapshot.projectsById.get('p2')).toBe(untouched.project);
    expect(snapshot.organisationsById.get('o1')).toBe(untouched.organisation);
    expect([snapshot.keysByHash, snapshot.projectsById, snapshot.organisationsById, snapshot.modelsBySlug].every((map, i) => map === untouched.maps[i])).toBe(true);
  });

  it('builds fresh maps for a full snapshot, so a request still holding the old snapshot keeps it whole', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const { snapshot } = applied(first, full(2n, { apiKeys: [{ keyHash: hashB, keyId: 'k2', projectId: 'p1' }] }));
    expect(snapshot).not.toBe(first);
    expect([...snapshot.keysByHash.keys()]).toEqual([hashB]);
    expect([...first.keysByHash.keys()]).toEqual([hashA]);
    expect(first.version).toBe(1n);
  });

  it('assembles a multi-part full snapshot: the first part replaces, the later parts of its version add', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const part1 = applied(first, full(5n, { apiKeys: [], projects: [], gatewayModels: [model('m2')] })).snapshot;
    expect(part1.keysByHash.size).toBe(0);
    expect([...part1.modelsBySlug.keys()]).toEqual(['m2']);
    const part2 = applied(part1, configV1.ConfigUpdate.fromPartial({ version: 5n, projects: [{ id: 'p9', organisationId: 'o1' }] })).snapshot;
    const part3 = applied(part2, configV1.ConfigUpdate.fromPartial({ version: 5n, apiKeys: [{ keyHash: hashB, keyId: 'k9', projectId: 'p9' }] })).snapshot;
    expect(part3).toBe(part1);
    expect(part3.version).toBe(5n);
    expect([...part3.keysByHash.keys()]).toEqual([hashB]);
    expect([...part3.projectsById.keys()]).toEqual(['p9']);
    expect([...part3.organisationsById.keys()]).toEqual(['o1']);
    // Shared id strings: the key names its project with the id string the project entry holds.
    expect(part3.keysByHash.get(hashB)!.projectId).toBe(part3.projectsById.get('p9')!.id);
  });

  it('changes nothing when a delta cannot be applied', () => {
    const first = applied(undefined, full(4n)).snapshot;
    const result = applyConfigUpdate(first, configV1.ConfigUpdate.fromPartial({ version: 3n, removedKeyHashes: [hashA], apiKeys: [{ keyHash: hashB, keyId: 'k2', projectId: 'p1' }] }), options);
    expect(result).toMatchObject({ ok: false });
    expect([...first.keysByHash.keys()]).toEqual([hashA]);
    expect(first.version).toBe(4n);
  });

  it('replaces everything on a full update', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const { snapshot } = applied(first, full(2n, { apiKeys: [], gatewayModels: [] }));
    expect(snapshot.keysByHash.size).toBe(0);
    expect(snapshot.modelsBySlug.size).toBe(0);
  });

  it('treats a heartbeat as no change, and refuses deltas with no base or an older version', () => {
    const first = applied(undefined, full(4n)).snapshot;
    const heartbeat = applied(first, configV1.ConfigUpdate.fromPartial({ version: 4n }));
    expect(heartbeat).toMatchObject({ changed: false });
    expect(heartbeat.snapshot).toBe(first);
    expect(applied(first, configV1.ConfigUpdate.fromPartial({ version: 6n })).snapshot.version).toBe(6n);
    expect(applyConfigUpdate(undefined, configV1.ConfigUpdate.fromPartial({ version: 1n }), options)).toMatchObject({ ok: false });
    expect(applyConfigUpdate(first, configV1.ConfigUpdate.fromPartial({ version: 3n, removedKeyHashes: [hashA] }), options)).toMatchObject({ ok: false });
    expect(first.keysByHash.size).toBe(1);
  });

  it('leaves out invalid entries (and the older entry they meant to replace), reporting each', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const result = applied(first, configV1.ConfigUpdate.fromPartial({
      version: 2n,
      gatewayModels: [model('m1', { upstream: undefined }), model('m2', { upstream: { providerKind: 'carrier_pigeon', baseUrl: 'https://x', model: 'y', apiKey: '' } })],
      organisations: [{ id: 'o2', billingMode: configV1.BillingMode.BILLING_MODE_UNSPECIFIED }],
      apiKeys: [{ keyHash: 'not-a-hash', keyId: 'k9', projectId: 'p1' }],
    }));
    expect(result.problems).toHaveLength(4);
    expect(result.snapshot.modelsBySlug.size).toBe(0);
    expect(result.snapshot.organisationsById.has('o2')).toBe(false);
    expect(result.snapshot.keysByHash.size).toBe(1);
  });

  it('counts any status other than ACTIVE as suspended', () => {
    const { snapshot } = applied(undefined, full(1n, {
      organisations: [{ id: 'o1', status: configV1.OrganisationStatus.ORGANISATION_STATUS_UNSPECIFIED, billingMode: configV1.BillingMode.BILLING_MODE_INTERNAL, rpmLimit: 0, allowedGatewayModelSlugs: [] }],
    }));
    expect(snapshot.organisationsById.get('o1')).toMatchObject({ status: 'suspended', billingMode: 'internal' });
  });
});

describe('allow_private_network', () => {
  it('is carried to the upstream target, false unless the admin set it', () => {
    const { snapshot } = applied(undefined, full(1n, { gatewayModels: [model('m1'), model('m2', { allowPrivateNetwork: true })] }));
    expect(snapshot.modelsBySlug.get('m1')?.upstream.allowPrivateNetwork).toBe(false);
    expect(snapshot.modelsBySlug.get('m2')?.upstream.allowPrivateNetwork).toBe(true);
  });
});
