import { describe, expect, it } from 'vitest';
import { configV1 } from '@gateway/contracts';
import { fullConfigUpdate, splitConfigUpdate } from './config-update.ts';

const hex = (i: number) => i.toString(16).padStart(24, '0');

function bigFullUpdate(projects: number): configV1.ConfigUpdate {
  return configV1.ConfigUpdate.fromPartial({
    version: 42n, full: true, producedAtMs: 1n,
    organisations: [{ id: `org_${hex(1)}`, status: 1, billingMode: 1, rpmLimit: 5, allowedGatewayModelSlugs: ['m'] }],
    projects: Array.from({ length: projects }, (_, i) => ({ id: `proj_${hex(i)}`, organisationId: `org_${hex(1)}`, disabled: false })),
    apiKeys: Array.from({ length: projects }, (_, i) => ({ keyHash: 'a'.repeat(64), keyId: `key_${hex(i)}`, projectId: `proj_${hex(i)}` })),
    removedKeyHashes: ['b'.repeat(64)],
  });
}

describe('splitConfigUpdate', () => {
  it('returns an update that fits unchanged', () => {
    const update = bigFullUpdate(10);
    expect(splitConfigUpdate(update, 1_000_000)).toEqual([update]);
  });

  it('splits a large update into parts of one version that each encode under the limit and together hold everything', () => {
    const update = bigFullUpdate(20_000);
    const maxBytes = 256 * 1024;
    const parts = splitConfigUpdate(update, maxBytes);
    expect(parts.length).toBeGreaterThan(5);
    for (const part of parts) {
      expect(part.version).toBe(42n);
      expect(configV1.ConfigUpdate.encode(part).finish().length).toBeLessThanOrEqual(maxBytes);
    }
    expect(parts.map((part) => part.full)).toEqual([true, ...parts.slice(1).map(() => false)]);
    expect(parts.flatMap((part) => part.projects)).toEqual(update.projects);
    expect(parts.flatMap((part) => part.apiKeys)).toEqual(update.apiKeys);
    // Removals and organisations first, keys last.
    expect(parts[0]!.removedKeyHashes).toEqual(update.removedKeyHashes);
    expect(parts[0]!.organisations).toEqual(update.organisations);
    expect(parts.at(-1)!.apiKeys.length).toBeGreaterThan(0);
    expect(parts[0]!.apiKeys).toEqual([]);
  });

  it('sends the tool-call id key in the first part only: the proxy keeps it through the later parts', () => {
    const toolCallIdKey = Buffer.alloc(32, 9);
    const parts = splitConfigUpdate(configV1.ConfigUpdate.fromPartial({ ...bigFullUpdate(20_000), toolCallIdKey }), 256 * 1024);
    expect(parts.map((part) => part.toolCallIdKey)).toEqual([toolCallIdKey, ...parts.slice(1).map(() => undefined)]);
    expect(configV1.ConfigUpdate.decode(configV1.ConfigUpdate.encode(parts[0]!).finish()).toolCallIdKey).toEqual(toolCallIdKey);
  });
});

describe('fullConfigUpdate', () => {
  it('carries the tool-call id key with the snapshot', () => {
    const toolCallIdKey = Buffer.alloc(32, 3);
    const update = fullConfigUpdate({ version: 7n, organisations: [], projects: [], apiKeys: [], retiredApiKeys: [], gatewayModels: [], platformModelAliases: {} }, 1, toolCallIdKey);
    expect(update).toMatchObject({ version: 7n, full: true, toolCallIdKey });
  });

  it('carries the keys rotated away lately, with their project and when, for the request log', () => {
    const keyHash = 'a'.repeat(64);
    const update = fullConfigUpdate({
      version: 8n, organisations: [], projects: [], apiKeys: [], gatewayModels: [], platformModelAliases: {},
      retiredApiKeys: [{ keyHash, projectId: 'proj_1', retiredAtMs: 1_700_000_000_123 }],
    }, 1, Buffer.alloc(32, 3));
    expect(update.retiredApiKeys).toEqual([{ keyHash, projectId: 'proj_1', retiredAtMs: 1_700_000_000_123n }]);
    expect(update.apiKeys).toEqual([]);
  });
});
