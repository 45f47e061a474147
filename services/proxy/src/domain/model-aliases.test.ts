import { describe, expect, it } from 'vitest';
import { applyConfigChange, type ConfigChange, type GatewayModelEntry, type OrganisationEntry } from './config-snapshot.ts';
import { resolveModelName } from './model-aliases.ts';

function model(slug: string): GatewayModelEntry {
  return {
    slug, displayName: slug, kind: 'chat', mediaModalities: new Set(), defaultMaxTokens: 16, maxContextTokens: 1024,
    inputPriceMicrosPerMtok: 1n, outputPriceMicrosPerMtok: 2n, providerInputCostMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n, createdAtS: 5,
    upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-x', apiKey: 'k', allowPrivateNetwork: false },
    tokenizer: 'o200k_base',
  };
}

function organisation(id: string, aliases: Record<string, string> = {}): OrganisationEntry {
  return { id, status: 'active', billingMode: 'commercial', rpmLimit: 0, allowedModelSlugs: new Set(['fast', 'smart']), modelAliases: new Map(Object.entries(aliases)) };
}

function change(version: bigint, parts: Partial<ConfigChange>): ConfigChange {
  return {
    version, full: false, organisations: [], projects: [], apiKeys: [], gatewayModels: [],
    removedOrganisationIds: [], removedProjectIds: [], removedKeyHashes: [], removedGatewayModelSlugs: [],
    platformModelAliases: [], removedPlatformModelAliases: [], ...parts,
  };
}

function snapshotWith(platformAliases: Array<[string, string]>) {
  const result = applyConfigChange(undefined, change(1n, {
    full: true, gatewayModels: ['fast', 'smart'].map((slug) => ({ key: slug, entry: model(slug) })), platformModelAliases: platformAliases,
  }));
  if (!result.ok) throw new Error(result.reason);
  return result.snapshot;
}

describe('resolveModelName', () => {
  const snapshot = snapshotWith([['claude-sonnet-4-5', 'smart'], ['claude-haiku-4-5', 'fast'], ['smart-alias-of-slug', 'smart']]);

  it('resolves a slug to its own model', () => {
    expect(resolveModelName(snapshot, organisation('o1'), 'fast')?.slug).toBe('fast');
  });

  it('resolves a platform alias to its slug\'s model', () => {
    expect(resolveModelName(snapshot, organisation('o1'), 'claude-sonnet-4-5')?.slug).toBe('smart');
  });

  it('prefers the organisation\'s alias over the platform\'s of the same name', () => {
    const overriding = organisation('o2', { 'claude-sonnet-4-5': 'fast' });
    expect(resolveModelName(snapshot, overriding, 'claude-sonnet-4-5')?.slug).toBe('fast');
    // Another organisation still gets the platform's.
    expect(resolveModelName(snapshot, organisation('o3'), 'claude-sonnet-4-5')?.slug).toBe('smart');
  });

  it('prefers a slug over any alias of the same name, the organisation\'s included', () => {
    const shadowing = organisation('o4', { fast: 'smart' });
    expect(resolveModelName(snapshotWith([['fast', 'smart']]), shadowing, 'fast')?.slug).toBe('fast');
  });

  it('answers undefined for a name that is neither slug nor alias, and for an alias whose model is gone', () => {
    expect(resolveModelName(snapshot, organisation('o1'), 'gpt-9')).toBeUndefined();
    expect(resolveModelName(snapshotWith([['dangling', 'removed-model']]), organisation('o1'), 'dangling')).toBeUndefined();
    // Matching is exact: case counts.
    expect(resolveModelName(snapshot, organisation('o1'), 'Claude-Sonnet-4-5')).toBeUndefined();
  });

  it('follows a delta that retargets and one that removes a platform alias', () => {
    const live = snapshotWith([['claude-sonnet-4-5', 'smart']]);
    const retargeted = applyConfigChange(live, change(2n, { platformModelAliases: [['claude-sonnet-4-5', 'fast']] }));
    expect(retargeted.ok && resolveModelName(retargeted.snapshot, organisation('o1'), 'claude-sonnet-4-5')?.slug).toBe('fast');
    const removed = applyConfigChange(live, change(3n, { removedPlatformModelAliases: ['claude-sonnet-4-5'] }));
    expect(removed.ok && resolveModelName(removed.snapshot, organisation('o1'), 'claude-sonnet-4-5')).toBeUndefined();
  });

  it('drops the aliases a full change no longer carries', () => {
    const live = snapshotWith([['gone-alias', 'fast']]);
    const result = applyConfigChange(live, change(2n, { full: true, gatewayModels: [{ key: 'fast', entry: model('fast') }] }));
    expect(result.ok && resolveModelName(result.snapshot, organisation('o1'), 'gone-alias')).toBeUndefined();
  });

  it('treats a delta carrying only an alias change as a change, not a heartbeat', () => {
    const live = snapshotWith([]);
    const result = applyConfigChange(live, change(2n, { platformModelAliases: [['x', 'fast']] }));
    expect(result).toMatchObject({ ok: true, changed: true });
  });
});
