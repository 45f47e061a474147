import { describe, expect, it } from 'vitest';
import {
  applyConfigChange, type ConfigChange, type ConfigItem, type GatewayModelEntry, type KeyEntry, type LiveConfigSnapshot,
  type OrganisationEntry, type ProjectEntry,
} from './config-snapshot.ts';

const hashA = 'a'.repeat(64);
const hashB = 'b'.repeat(64);
const hashC = 'c'.repeat(64);

function organisation(id: string): ConfigItem<OrganisationEntry> {
  return { key: id, entry: { id, status: 'active', billingMode: 'commercial', rpmLimit: 5, allowedModelSlugs: new Set(['m1']), modelAliases: new Map() } };
}

function project(id: string, organisationId = 'o1'): ConfigItem<ProjectEntry> {
  return { key: id, entry: { id, organisationId, disabled: false } };
}

function key(keyHash: string, keyId: string, projectId = 'p1'): ConfigItem<KeyEntry> {
  return { key: keyHash, entry: { keyHash, keyId, projectId } };
}

function model(slug: string): ConfigItem<GatewayModelEntry> {
  return {
    key: slug,
    entry: {
      slug, displayName: slug, kind: 'chat', mediaModalities: new Set(), defaultMaxTokens: 16, maxContextTokens: 1024, inputPriceMicrosPerMtok: 1n, outputPriceMicrosPerMtok: 2n,
      providerInputCostMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n, createdAtS: 5,
      upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-x', apiKey: 'k', allowPrivateNetwork: false },
      tokenizer: 'o200k_base',
    },
  };
}

/** A delta (or a later part of a full snapshot) naming only what `parts` gives. */
function delta(version: bigint, parts: Partial<ConfigChange> = {}): ConfigChange {
  return {
    version, full: false, organisations: [], projects: [], apiKeys: [], gatewayModels: [],
    removedOrganisationIds: [], removedProjectIds: [], removedKeyHashes: [], removedGatewayModelSlugs: [],
    platformModelAliases: [], removedPlatformModelAliases: [],
    ...parts,
  };
}

/** A full change with one organisation, project, key and model unless `parts` replaces them. */
function full(version: bigint, parts: Partial<ConfigChange> = {}): ConfigChange {
  return delta(version, {
    full: true, organisations: [organisation('o1')], projects: [project('p1')], apiKeys: [key(hashA, 'k1')], gatewayModels: [model('m1')],
    ...parts,
  });
}

function applied(current: LiveConfigSnapshot | undefined, change: ConfigChange) {
  const result = applyConfigChange(current, change);
  if (!result.ok) throw new Error(result.reason);
  return result;
}

describe('applyConfigChange', () => {
  it('builds a snapshot from a full change, keyed for lookups', () => {
    const { snapshot, problems, changed } = applied(undefined, full(3n));
    expect(problems).toEqual([]);
    expect(changed).toBe(true);
    expect(snapshot.version).toBe(3n);
    expect(snapshot.keysByHash.get(hashA)).toEqual({ keyHash: hashA, keyId: 'k1', projectId: 'p1' });
    expect(snapshot.projectsById.get('p1')).toEqual({ id: 'p1', organisationId: 'o1', disabled: false });
    expect(snapshot.organisationsById.get('o1')).toMatchObject({ status: 'active', billingMode: 'commercial', rpmLimit: 5 });
    expect(snapshot.modelsBySlug.get('m1')).toMatchObject({ createdAtS: 5, outputPriceMicrosPerMtok: 2n });
  });

  it('applies a delta in place: removals and upserts change the held maps, nothing else is rebuilt', () => {
    const first = applied(undefined, full(1n, {
      projects: [project('p1'), project('p2')],
      apiKeys: [key(hashA, 'k1'), key(hashC, 'k3', 'p2')],
    })).snapshot;
    const untouched = {
      maps: [first.keysByHash, first.projectsById, first.organisationsById, first.modelsBySlug],
      key: first.keysByHash.get(hashC), project: first.projectsById.get('p2'), organisation: first.organisationsById.get('o1'),
    };
    const { snapshot, changed } = applied(first, delta(2n, {
      removedKeyHashes: [hashA], apiKeys: [key(hashB, 'k2')], removedGatewayModelSlugs: ['m1'],
    }));
    expect(changed).toBe(true);
    expect(snapshot).toBe(first);
    expect(snapshot.version).toBe(2n);
    expect([...snapshot.keysByHash.keys()].sort()).toEqual([hashB, hashC]);
    expect(snapshot.modelsBySlug.size).toBe(0);
    // The same maps, and the very same entry objects for everything the delta did not name.
    expect(snapshot.keysByHash.get(hashC)).toBe(untouched.key);
    expect(snapshot.projectsById.get('p2')).toBe(untouched.project);
    expect(snapshot.organisationsById.get('o1')).toBe(untouched.organisation);
    expect([snapshot.keysByHash, snapshot.projectsById, snapshot.organisationsById, snapshot.modelsBySlug].every((map, i) => map === untouched.maps[i])).toBe(true);
  });

  it('applies removals before upserts, so a delta can remove and re-add the same key', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const { snapshot } = applied(first, delta(2n, { removedKeyHashes: [hashA], apiKeys: [key(hashA, 'k9')] }));
    expect(snapshot.keysByHash.get(hashA)?.keyId).toBe('k9');
  });

  it('builds fresh maps for a full snapshot, so a request still holding the old snapshot keeps it whole', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const { snapshot } = applied(first, full(2n, { apiKeys: [key(hashB, 'k2')] }));
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
    const part2 = applied(part1, delta(5n, { projects: [project('p9')] })).snapshot;
    const part3 = applied(part2, delta(5n, { apiKeys: [key(hashB, 'k9', 'p9')] })).snapshot;
    expect(part3).toBe(part1);
    expect(part3.version).toBe(5n);
    expect([...part3.keysByHash.keys()]).toEqual([hashB]);
    expect([...part3.projectsById.keys()]).toEqual(['p9']);
    expect([...part3.organisationsById.keys()]).toEqual(['o1']);
    // The key names its project by the project entry's id. (That the two share one string in
    // memory cannot be observed from JavaScript; the memory it saves shows in the snapshot bench.)
    expect(part3.keysByHash.get(hashB)!.projectId).toBe(part3.projectsById.get('p9')!.id);
  });

  it('changes nothing when a delta cannot be applied', () => {
    const first = applied(undefined, full(4n)).snapshot;
    const result = applyConfigChange(first, delta(3n, { removedKeyHashes: [hashA], apiKeys: [key(hashB, 'k2')] }));
    expect(result).toMatchObject({ ok: false });
    expect([...first.keysByHash.keys()]).toEqual([hashA]);
    expect(first.version).toBe(4n);
  });

  it('replaces everything on a full change', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const { snapshot } = applied(first, full(2n, { apiKeys: [], gatewayModels: [] }));
    expect(snapshot.keysByHash.size).toBe(0);
    expect(snapshot.modelsBySlug.size).toBe(0);
  });

  it('treats a heartbeat as no change, and refuses deltas with no base or an older version', () => {
    const first = applied(undefined, full(4n)).snapshot;
    const heartbeat = applied(first, delta(4n));
    expect(heartbeat).toMatchObject({ changed: false });
    expect(heartbeat.snapshot).toBe(first);
    expect(applied(first, delta(6n)).snapshot.version).toBe(6n);
    expect(applyConfigChange(undefined, delta(1n))).toMatchObject({ ok: false });
    expect(applyConfigChange(first, delta(3n, { removedKeyHashes: [hashA] }))).toMatchObject({ ok: false });
    expect(first.keysByHash.size).toBe(1);
  });

  it('leaves out invalid entries (and the older entry they meant to replace), reporting each', () => {
    const first = applied(undefined, full(1n)).snapshot;
    const result = applied(first, delta(2n, {
      gatewayModels: [{ key: 'm1', problem: 'gateway model m1: no upstream' }, { key: 'm2', problem: 'gateway model m2: unsupported provider kind' }],
      organisations: [{ key: 'o2', problem: 'organisation o2: unknown billing mode 0' }],
      apiKeys: [{ key: 'not-a-hash', problem: 'key k9: hash is not hex SHA-256' }],
    }));
    expect(result.problems).toEqual([
      'organisation o2: unknown billing mode 0', 'key k9: hash is not hex SHA-256',
      'gateway model m1: no upstream', 'gateway model m2: unsupported provider kind',
    ]);
    expect(result.snapshot.modelsBySlug.size).toBe(0);
    expect(result.snapshot.organisationsById.has('o2')).toBe(false);
    expect(result.snapshot.keysByHash.size).toBe(1);
  });
});
