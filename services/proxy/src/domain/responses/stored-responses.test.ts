import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createResponseSealer } from '../../test-support/response-sealers.ts';
import { InProcessResponseStore } from './response-store.ts';
import { readStatefulFields, storedInputItems } from './stateful-input.ts';
import type { ResponseStore } from './response-store.ts';
import { inputItemId, responseIdOfItemId, StoredResponses, type StoredResponseRecord } from './stored-responses.ts';
import type { ConfigSnapshot, OrganisationEntry } from '../config-snapshot.ts';

const responseId = 'resp_0b35cffe-0972-4710-b464-830bd8bf8a3a';
const organisation = (overrides: Partial<OrganisationEntry> = {}): OrganisationEntry => ({
  id: 'org_a', status: 'active', billingMode: 'commercial', rpmLimit: 0, allowedModelSlugs: new Set(), modelAliases: new Map(), ...overrides,
});
const snapshot = (overrides: Partial<ConfigSnapshot> = {}) => ({ responseStoreKey: randomBytes(32), ...overrides }) as unknown as ConfigSnapshot;

/** The retention used when the admin sends none, seconds: OpenAI's 30 days. */
const defaultResponseRetentionS = 30 * 24 * 60 * 60;

/** The retention StoredResponses.save keeps a record for, seconds: the time to live it hands the store (synchronously, before its first await). */
function retentionSOf(config: ConfigSnapshot, owner: OrganisationEntry): number {
  let ttlMs = Number.NaN;
  const store = { put: (_key: unknown, _value: Buffer, timeToLiveMs: number) => { ttlMs = timeToLiveMs; return Promise.resolve(); } } as unknown as ResponseStore;
  const stored = new StoredResponses({ store, sealerOf: (s) => createResponseSealer(s.responseStoreKey!) });
  void stored.save(config, owner, { storedAtMs: 0, response: { id: responseId, output: [] }, inputItems: [], context: [] });
  return ttlMs / 1000;
}

describe('the response sealer', () => {
  it('opens what it sealed only under the same organisation, response id and key', () => {
    const key = randomBytes(32);
    const sealer = createResponseSealer(key);
    const sealed = sealer.seal('org_a', responseId, Buffer.from('customer content'));
    expect(sealed.includes(Buffer.from('customer content'))).toBe(false);
    expect(sealer.open('org_a', responseId, sealed)?.toString()).toBe('customer content');
    expect(sealer.open('org_b', responseId, sealed)).toBeUndefined();
    expect(sealer.open('org_a', 'resp_other', sealed)).toBeUndefined();
    expect(createResponseSealer(randomBytes(32)).open('org_a', responseId, sealed)).toBeUndefined();
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1]! ^= 1;
    expect(sealer.open('org_a', responseId, tampered)).toBeUndefined();
  });
});

describe('stored responses', () => {
  const record = (storedAtMs: number): StoredResponseRecord => ({ storedAtMs, response: { id: responseId, output: [] }, inputItems: [], context: [] });

  it('expire at the retention by the store\'s clock, and at a shortened retention on read', async () => {
    let nowMs = 1_000_000;
    const store = new InProcessResponseStore({ maxBytes: 1024 * 1024, now: () => nowMs });
    const stored = new StoredResponses({ store, sealerOf: (s) => createResponseSealer(s.responseStoreKey!), now: () => nowMs });
    const config = snapshot({ responseRetentionS: 60 });
    await stored.save(config, organisation(), record(nowMs));
    expect((await stored.load(config, organisation(), responseId))?.response.id).toBe(responseId);
    expect(await stored.load(config, organisation({ id: 'org_b' }), responseId)).toBeUndefined();
    // The organisation shortens its retention to 10 s: a record 10 s old reads as gone.
    nowMs += 10_000;
    expect(await stored.load(config, organisation({ responseRetentionS: 10 }), responseId)).toBeUndefined();
    await stored.save(config, organisation(), record(nowMs));
    nowMs += 60_000;
    expect(await stored.load(config, organisation(), responseId)).toBeUndefined();
    await store.close();
  });

  it('keep at most maxBytes in process, the oldest going first; a record larger than the bound is refused', async () => {
    const store = new InProcessResponseStore({ maxBytes: 20 });
    for (const id of ['a', 'b', 'c']) await store.put({ organisationId: 'o', responseId: id }, Buffer.alloc(8, id), 60_000);
    expect(await store.get({ organisationId: 'o', responseId: 'a' })).toBeUndefined();
    expect(String(await store.get({ organisationId: 'o', responseId: 'b' }))).toBe('bbbbbbbb');
    expect(String(await store.get({ organisationId: 'o', responseId: 'c' }))).toBe('cccccccc');
    await expect(store.put({ organisationId: 'o', responseId: 'd' }, Buffer.alloc(21), 60_000)).rejects.toThrow(/exceeds/);
    expect(await store.delete({ organisationId: 'o', responseId: 'c' })).toBe(true);
    expect(await store.delete({ organisationId: 'o', responseId: 'c' })).toBe(false);
    await store.close();
  });

  it('retention: the platform\'s (30 days without one), or the organisation\'s when shorter', () => {
    expect(retentionSOf(snapshot({ responseRetentionS: undefined }), organisation())).toBe(defaultResponseRetentionS);
    expect(retentionSOf(snapshot({ responseRetentionS: 100 }), organisation({ responseRetentionS: 10 }))).toBe(10);
    expect(retentionSOf(snapshot({ responseRetentionS: 100 }), organisation({ responseRetentionS: 1000 }))).toBe(100);
  });

  it('item ids name their response', () => {
    const base = '0b35cffe09724710b464830bd8bf8a3a';
    expect(responseIdOfItemId(`msg_${base}_0`)).toBe(responseId);
    expect(responseIdOfItemId(inputItemId(base, 'function_call_output', 3))).toBe(responseId);
    expect(responseIdOfItemId('msg_1')).toBeUndefined();
    expect(storedInputItems('hi', base)).toEqual([{ id: `msg_${base}_i0`, type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }]);
  });
});

describe('readStatefulFields', () => {
  it('stores by default; storing off refuses store: true and previous_response_id, naming them', () => {
    expect(readStatefulFields({}, organisation())).toEqual({ store: true, previousResponseId: undefined });
    expect(readStatefulFields({ store: false, previous_response_id: 'resp_1' }, organisation())).toEqual({ store: false, previousResponseId: 'resp_1' });
    expect(readStatefulFields({}, organisation({ responseStoreDisabled: true })).store).toBe(false);
    expect(() => readStatefulFields({ store: true }, organisation({ responseStoreDisabled: true }))).toThrow(expect.objectContaining({ param: 'store' }));
    expect(() => readStatefulFields({ previous_response_id: 'resp_1' }, organisation({ responseStoreDisabled: true }))).toThrow(expect.objectContaining({ param: 'previous_response_id' }));
    expect(() => readStatefulFields({ previous_response_id: 3 }, organisation())).toThrow(expect.objectContaining({ param: 'previous_response_id' }));
  });
});
