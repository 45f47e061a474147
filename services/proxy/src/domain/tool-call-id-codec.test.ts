import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createToolCallIdCodec } from '../test-support/tool-call-id-codecs.ts';
import { toolCallIdCodecForKey } from './tool-call-id-codec.ts';

const key = randomBytes(32);
const codec = createToolCallIdCodec(key);
const gatewayIdShape = /^call_[A-Za-z0-9_-]{212}$/;
const base64urlAlphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Upstream ids as vendors might make them: any text of at most 128 UTF-8 bytes. */
const upstreamIds = fc.string({ unit: 'grapheme', maxLength: 60 }).filter((id) => Buffer.byteLength(id) <= 128);

describe('createToolCallIdCodec', () => {
  it('maps every upstream id of up to 128 bytes to a 217-character call_ id and back', () => {
    fc.assert(fc.property(upstreamIds, (upstreamId) => {
      const gatewayId = codec.conceal(upstreamId);
      expect(gatewayId).toMatch(gatewayIdShape);
      expect(codec.reveal(gatewayId)).toBe(upstreamId);
    }));
    for (const upstreamId of ['toolu_vendorsecret_1', 'call_vendorsecret_2', '', 'x'.repeat(128), 'ツール呼び出し']) {
      expect(codec.reveal(codec.conceal(upstreamId))).toBe(upstreamId);
    }
  });

  it('shows nothing of the upstream id: not its text, not its length', () => {
    const short = codec.conceal('a');
    const anthropic = codec.conceal('toolu_01A09q90qw90lq917835lq9');
    const long = codec.conceal('chatcmpl-tool-0123456789abcdef0123456789abcdef');
    expect(new Set([short.length, anthropic.length, long.length])).toEqual(new Set([217]));
    expect(anthropic).not.toContain('toolu');
    // A fresh IV per id: the same upstream id twice gives two ids, both of which map back.
    const again = codec.conceal('toolu_01A09q90qw90lq917835lq9');
    expect(again).not.toBe(anthropic);
    expect(codec.reveal(again)).toBe('toolu_01A09q90qw90lq917835lq9');
  });

  it('refuses (undefined) an id of the gateway\'s shape with any one character changed', () => {
    const gatewayId = codec.conceal('call_vendorsecret_7');
    fc.assert(fc.property(fc.integer({ min: 5, max: 216 }), fc.integer({ min: 1, max: 63 }), (position, shift) => {
      const replaced = base64urlAlphabet[(base64urlAlphabet.indexOf(gatewayId[position]!) + shift) % 64]!;
      const tampered = gatewayId.slice(0, position) + replaced + gatewayId.slice(position + 1);
      expect(codec.reveal(tampered)).toBeUndefined();
    }));
  });

  it('refuses (undefined) an id sealed under another key, such as the key before a rotation', () => {
    const otherKey = createToolCallIdCodec(randomBytes(32));
    expect(codec.reveal(otherKey.conceal('call_vendorsecret_3'))).toBeUndefined();
  });

  it('passes ids that are not of the gateway\'s shape through unchanged (a conversation the client built or imported)', () => {
    const foreign = [
      'call_1', 'call_abc123', `call_${'a'.repeat(24)}`, 'toolu_01A09q90qw90lq917835lq9', 'tool-call-7',
      `call_${'A'.repeat(211)}`, `call_${'A'.repeat(213)}`, `${codec.conceal('x')}!`, `toolu_${codec.conceal('x').slice(5)}`,
    ];
    for (const id of foreign) expect(codec.reveal(id)).toBe(id);
  });

  it('conceals an absurdly long upstream id (over 128 bytes) without carrying it: its id is refused on the way back', () => {
    const gatewayId = codec.conceal('v'.repeat(129));
    expect(gatewayId).toMatch(gatewayIdShape);
    expect(codec.reveal(gatewayId)).toBeUndefined();
  });

  it('takes only a 32-byte key', () => {
    expect(() => createToolCallIdCodec(randomBytes(16))).toThrow(/32 bytes/);
  });
});

describe('toolCallIdCodecForKey', () => {
  it('builds one codec per key, also when a full snapshot brings the same key in a new buffer', () => {
    const codecOf = toolCallIdCodecForKey(() => { throw new Error('no local key expected'); });
    const first = codecOf(key);
    expect(codecOf(key)).toBe(first);
    expect(codecOf(Buffer.from(key))).toBe(first);
    const rotated = codecOf(randomBytes(32));
    expect(rotated).not.toBe(first);
    expect(rotated.reveal(first.conceal('toolu_1'))).toBeUndefined();
  });

  it('without a key from the admin, seals with one random key of the process and says so once', () => {
    let warnings = 0;
    const codecOf = toolCallIdCodecForKey(() => { warnings += 1; });
    const local = codecOf(undefined);
    expect(codecOf(undefined)).toBe(local);
    expect(warnings).toBe(1);
    expect(local.reveal(local.conceal('toolu_1'))).toBe('toolu_1');
    // Another process (replica) has another key: its ids do not open here.
    expect(toolCallIdCodecForKey(() => {})(undefined).reveal(local.conceal('toolu_1'))).toBeUndefined();
  });
});
