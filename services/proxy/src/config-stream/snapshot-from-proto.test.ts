import { describe, expect, it } from 'vitest';
import { configV1 } from '@gateway/contracts';
import { applyConfigChange } from '../domain/config-snapshot.ts';
import { configChangeFromProto } from './snapshot-from-proto.ts';

const options = { supportsProviderKind: (kind: string) => kind === 'openai_compatible' };
const hashA = 'a'.repeat(64);

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

/** The entries of a change that decoded, by key (a decoding problem fails the test). */
function decoded(update: configV1.ConfigUpdate) {
  const change = configChangeFromProto(update, options);
  const entries = <Entry>(items: ReadonlyArray<{ key: string; entry: Entry } | { key: string; problem: string }>) =>
    new Map(items.map((item) => {
      if ('problem' in item) throw new Error(item.problem);
      return [item.key, item.entry] as const;
    }));
  return {
    change,
    organisations: entries(change.organisations), projects: entries(change.projects),
    apiKeys: entries(change.apiKeys), gatewayModels: entries(change.gatewayModels),
  };
}

describe('configChangeFromProto', () => {
  it('decodes a full update into entries keyed for lookups, with key hashes lower-cased', () => {
    const { change, organisations, projects, apiKeys, gatewayModels } = decoded(full(3n));
    expect(change).toMatchObject({ version: 3n, full: true });
    expect(apiKeys.get(hashA)).toEqual({ keyHash: hashA, keyId: 'k1', projectId: 'p1' });
    expect(projects.get('p1')).toEqual({ id: 'p1', organisationId: 'o1', disabled: false });
    expect(organisations.get('o1')).toMatchObject({ status: 'active', billingMode: 'commercial', rpmLimit: 5 });
    expect(organisations.get('o1')!.allowedModelSlugs.has('m1')).toBe(true);
    expect(gatewayModels.get('m1')).toMatchObject({
      createdAtS: 5, outputPriceMicrosPerMtok: 2n, tokenizer: 'cl100k_base',
      upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-x', apiKey: 'k' },
    });
  });

  it('passes removals through, key hashes lower-cased as the snapshot holds them', () => {
    const { change } = decoded(configV1.ConfigUpdate.fromPartial({
      version: 2n, removedKeyHashes: [hashA.toUpperCase()], removedOrganisationIds: ['o1'], removedProjectIds: ['p1'], removedGatewayModelSlugs: ['m1'],
    }));
    expect(change).toMatchObject({
      version: 2n, full: false, removedKeyHashes: [hashA], removedOrganisationIds: ['o1'], removedProjectIds: ['p1'], removedGatewayModelSlugs: ['m1'],
    });
  });

  it('turns each invalid message into a problem under the key of the entry it meant to replace', () => {
    const change = configChangeFromProto(configV1.ConfigUpdate.fromPartial({
      version: 2n,
      gatewayModels: [model('m1', { upstream: undefined }), model('m2', { upstream: { providerKind: 'carrier_pigeon', baseUrl: 'https://x', model: 'y', apiKey: '' } })],
      organisations: [{ id: 'o2', billingMode: configV1.BillingMode.BILLING_MODE_UNSPECIFIED }],
      apiKeys: [{ keyHash: 'NOT-a-hash', keyId: 'k9', projectId: 'p1' }],
    }), options);
    expect(change.gatewayModels).toEqual([
      { key: 'm1', problem: 'gateway model m1: no upstream' },
      { key: 'm2', problem: 'gateway model m2: unsupported provider kind "carrier_pigeon"' },
    ]);
    expect(change.organisations).toEqual([{ key: 'o2', problem: 'organisation o2: unknown billing mode 0' }]);
    expect(change.apiKeys).toEqual([{ key: 'not-a-hash', problem: 'key k9: hash is not hex SHA-256' }]);
  });

  it('decodes the price sheet by token class: absent input classes at the input price, absent reasoning as output, the Reserve prices resolved', () => {
    const { gatewayModels } = decoded(full(4n, {
      gatewayModels: [
        model('older', { providerInputCostMicrosPerMtok: 7n, providerOutputCostMicrosPerMtok: 9n }),
        model('sheet', {
          inputPriceMicrosPerMtok: 3_000_000n, outputPriceMicrosPerMtok: 15_000_000n, cachedInputPriceMicrosPerMtok: 300_000n,
          cacheWrite5mPriceMicrosPerMtok: 3_750_000n, cacheWrite1hPriceMicrosPerMtok: 6_000_000n, reasoningPriceMicrosPerMtok: 20_000_000n,
          audioInputPriceMicrosPerMtok: 3_000_000n, imageInputPriceMicrosPerMtok: 3_000_000n, providerCachedInputCostMicrosPerMtok: 200_000n,
        }),
      ],
    }));
    expect(gatewayModels.get('older')!.priceSheet).toEqual({
      customer: { input: 1n, cached_input: 1n, cache_write_5m: 1n, cache_write_1h: 1n, audio_input: 1n, image_input: 1n, output: 2n, reasoning: 2n },
      provider: { input: 7n, cached_input: 7n, cache_write_5m: 7n, cache_write_1h: 7n, audio_input: 7n, image_input: 7n, output: 9n, reasoning: 9n },
      reserveInput: 1n, reserveOutput: 2n,
    });
    expect(gatewayModels.get('sheet')!.priceSheet).toMatchObject({
      customer: { input: 3_000_000n, cached_input: 300_000n, cache_write_5m: 3_750_000n, cache_write_1h: 6_000_000n, output: 15_000_000n, reasoning: 20_000_000n },
      provider: { input: 0n, cached_input: 200_000n, cache_write_5m: 0n, output: 0n, reasoning: 0n },
      reserveInput: 6_000_000n, reserveOutput: 20_000_000n,
    });
    const negative = configChangeFromProto(full(5n, { gatewayModels: [model('bad', { providerCacheWrite1hCostMicrosPerMtok: -1n })] }), options);
    expect(negative.gatewayModels).toEqual([{ key: 'bad', problem: 'gateway model bad: negative price' }]);
  });

  it('counts any status other than ACTIVE as suspended', () => {
    const { organisations } = decoded(full(1n, {
      organisations: [{ id: 'o1', status: configV1.OrganisationStatus.ORGANISATION_STATUS_UNSPECIFIED, billingMode: configV1.BillingMode.BILLING_MODE_INTERNAL, rpmLimit: 0, allowedGatewayModelSlugs: [], modelAliases: {}, responseStoreDisabled: false }],
    }));
    expect(organisations.get('o1')).toMatchObject({ status: 'suspended', billingMode: 'internal' });
  });

  it('decodes a full update the domain then serves: lookups by the lower-cased hash', () => {
    const result = applyConfigChange(undefined, configChangeFromProto(full(3n), options));
    expect(result).toMatchObject({ ok: true, problems: [] });
    if (!result.ok) return;
    expect(result.snapshot.keysByHash.get(hashA)).toEqual({ keyHash: hashA, keyId: 'k1', projectId: 'p1' });
  });
});

describe('deployments (GatewayModel 30)', () => {
  const primary = (overrides: Partial<configV1.UpstreamDeployment> = {}) => configV1.UpstreamDeployment.fromPartial({
    name: 'primary', priority: 0, weight: 1, providerInputCostMicrosPerMtok: 3n, providerOutputCostMicrosPerMtok: 4n,
    upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-x', apiKey: 'k' }, ...overrides,
  });
  const backup = (overrides: Partial<configV1.UpstreamDeployment> = {}) => configV1.UpstreamDeployment.fromPartial({
    name: 'eu-backup', priority: 1, weight: 7, allowPrivateNetwork: true,
    providerInputCostMicrosPerMtok: 30n, providerOutputCostMicrosPerMtok: 40n, providerCachedInputCostMicrosPerMtok: 5n,
    upstream: { providerKind: 'openai_compatible', baseUrl: 'https://eu.example.com/v1', model: 'vendor-y', apiKey: 'k2' }, ...overrides,
  });
  const costed = { providerInputCostMicrosPerMtok: 3n, providerOutputCostMicrosPerMtok: 4n };

  it('an older admin (no list): the model itself is its one deployment, primary', () => {
    const entry = decoded(full(1n)).gatewayModels.get('m1')!;
    expect(entry.deployments).toEqual([{ name: 'primary', priority: 0, weight: 1, upstream: entry.upstream, served: entry }]);
    expect(entry.deployments![0]!.served).toBe(entry);
  });

  it('each deployment is served with the model\'s customer prices and its own upstream and provider costs; the primary is the model itself', () => {
    const entry = decoded(full(1n, { gatewayModels: [model('m1', { ...costed, deployments: [primary(), backup()] })] })).gatewayModels.get('m1')!;
    const [first, second] = entry.deployments!;
    expect(first!.served).toBe(entry);
    expect(second).toMatchObject({ name: 'eu-backup', priority: 1, weight: 7 });
    expect(second!.upstream).toEqual({ providerKind: 'openai_compatible', baseUrl: 'https://eu.example.com/v1', model: 'vendor-y', apiKey: 'k2', allowPrivateNetwork: true });
    const served = second!.served;
    expect(served.upstream).toBe(second!.upstream);
    expect(served.priceSheet!.customer).toEqual(entry.priceSheet!.customer);
    expect(served.priceSheet!.provider).toEqual({
      input: 30n, output: 40n, reasoning: 40n, cached_input: 5n, cache_write_5m: 30n, cache_write_1h: 30n, audio_input: 30n, image_input: 30n,
    });
    expect(served.tokenizer).toBe(entry.tokenizer);
    // A primary whose costs differ from the model's is served with its own.
    const other = decoded(full(1n, { gatewayModels: [model('m1', { ...costed, deployments: [primary({ providerInputCostMicrosPerMtok: 9n })] })] })).gatewayModels.get('m1')!;
    expect(other.deployments![0]!.served).not.toBe(other);
    expect(other.deployments![0]!.served.priceSheet!.provider.input).toBe(9n);
  });

  it('leaves the model out for a deployment it cannot serve as the admin meant', () => {
    const problems = (deployments: configV1.UpstreamDeployment[]) => {
      const [item] = configChangeFromProto(full(1n, { gatewayModels: [model('m1', { ...costed, deployments })] }), options).gatewayModels;
      return 'problem' in item! ? item.problem : undefined;
    };
    expect(problems([primary(), backup({ name: 'Bad Name' })])).toMatch(/name/);
    expect(problems([primary(), backup({ name: 'primary' })])).toMatch(/twice/);
    expect(problems([primary(), backup({ weight: 0 })])).toMatch(/weight/);
    expect(problems([primary(), backup({ priority: 101 })])).toMatch(/priority/);
    expect(problems([primary(), backup({ upstream: { providerKind: 'mystery', baseUrl: 'https://x.example/v1', model: 'm', apiKey: '' } })])).toMatch(/provider kind/);
    expect(problems([primary(), backup({ providerOutputCostMicrosPerMtok: -1n })])).toMatch(/negative/);
    expect(problems(Array.from({ length: 17 }, (_, index) => backup({ name: `d${index}` })))).toMatch(/more than 16/);
    expect(problems([primary(), backup()])).toBeUndefined();
  });
});

describe('allow_private_network', () => {
  it('is carried to the upstream target, false unless the admin set it', () => {
    const { gatewayModels } = decoded(full(1n, { gatewayModels: [model('m1'), model('m2', { allowPrivateNetwork: true })] }));
    expect(gatewayModels.get('m1')?.upstream.allowPrivateNetwork).toBe(false);
    expect(gatewayModels.get('m2')?.upstream.allowPrivateNetwork).toBe(true);
  });
});

describe('reasoning controls (GatewayModel 26-29)', () => {
  it('are decoded as sets, none from an older admin; an unknown thinking mode leaves the model out', () => {
    const { gatewayModels } = decoded(full(1n, {
      gatewayModels: [model('m1'), model('m2', { reasoningEfforts: ['low', 'high'], thinkingModes: ['adaptive'], maxThinkingBudgetTokens: 8192, returnsReasoning: true })],
    }));
    expect(gatewayModels.get('m1')?.reasoning).toEqual({ efforts: new Set(), thinkingModes: new Set(), maxThinkingBudgetTokens: 0, returnsReasoning: false });
    expect(gatewayModels.get('m2')?.reasoning).toEqual({
      efforts: new Set(['low', 'high']), thinkingModes: new Set(['adaptive']), maxThinkingBudgetTokens: 8192, returnsReasoning: true,
    });
    const change = configChangeFromProto(full(2n, { gatewayModels: [model('m3', { thinkingModes: ['always'] })] }), options);
    expect(change.gatewayModels).toEqual([{ key: 'm3', problem: 'gateway model m3: unknown thinking mode "always"' }]);
  });
});

describe('tool_call_id_key', () => {
  const apply = (current: Parameters<typeof applyConfigChange>[0], update: configV1.ConfigUpdate) => {
    const result = applyConfigChange(current, configChangeFromProto(update, options));
    if (!result.ok) throw new Error(result.reason);
    return result.snapshot;
  };

  it('comes with a full update and stays through later parts, deltas and heartbeats; a full update without one drops it', () => {
    const key = Buffer.alloc(32, 7);
    const snapshot = apply(undefined, full(1n, { toolCallIdKey: key }));
    expect(snapshot.toolCallIdKey).toEqual(key);
    // The later part of a split full snapshot, a delta, a heartbeat: none carries the key, all keep it.
    apply(snapshot, configV1.ConfigUpdate.fromPartial({ version: 1n, full: false, gatewayModels: [model('m2')] }));
    apply(snapshot, configV1.ConfigUpdate.fromPartial({ version: 2n, full: false, removedGatewayModelSlugs: ['m2'] }));
    apply(snapshot, configV1.ConfigUpdate.fromPartial({ version: 2n, full: false }));
    expect(snapshot.toolCallIdKey).toEqual(key);
    // An older admin's full snapshot has none: the proxy then seals with a key of its own.
    expect(apply(snapshot, full(3n)).toolCallIdKey).toBeUndefined();
  });

  it('is decoded as none unless it is 32 bytes', () => {
    expect(configChangeFromProto(full(1n, { toolCallIdKey: Buffer.alloc(16, 1) }), options).toolCallIdKey).toBeUndefined();
    expect(configChangeFromProto(full(1n, { toolCallIdKey: Buffer.alloc(32, 1) }), options).toolCallIdKey).toEqual(Buffer.alloc(32, 1));
  });
});

describe('cache_scope_key', () => {
  it('comes with a full update and stays through deltas; one that is not 32 bytes is decoded as none', () => {
    const key = Buffer.alloc(32, 5);
    const first = applyConfigChange(undefined, configChangeFromProto(full(1n, { cacheScopeKey: key }), options));
    if (!first.ok) throw new Error(first.reason);
    expect(first.snapshot.cacheScopeKey).toEqual(key);
    const delta = applyConfigChange(first.snapshot, configChangeFromProto(configV1.ConfigUpdate.fromPartial({ version: 2n, full: false, gatewayModels: [model('m3')] }), options));
    if (!delta.ok) throw new Error(delta.reason);
    expect(delta.snapshot.cacheScopeKey).toEqual(key);
    expect(configChangeFromProto(full(3n, { cacheScopeKey: Buffer.alloc(16, 1) }), options).cacheScopeKey).toBeUndefined();
  });
});
