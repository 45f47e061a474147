import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createReasoningSeal } from './reasoning-seal.ts';
import { createToolCallIdCodec } from '../test-support/tool-call-id-codecs.ts';

describe('createReasoningSeal', () => {
  const key = randomBytes(32);
  const seal = createReasoningSeal(key);

  it('seals an upstream token into the gateway\'s opaque form that opens again, differently each time', () => {
    const signature = 'EqQBCkgIARABGAIiQ-vendor-signature';
    const first = seal.seal(signature);
    const second = seal.seal(signature);
    expect(first).toMatch(/^gwr1_[A-Za-z0-9_-]+$/);
    expect(first).not.toContain('EqQB');
    expect(first).not.toBe(second);
    expect(seal.open(first)).toBe(signature);
    expect(seal.open(second)).toBe(signature);
  });

  it('opens nothing altered, foreign, or sealed under another key (nor a tool-call id sealed under the same key)', () => {
    const sealed = seal.seal('sig');
    expect(seal.open(`${sealed.slice(0, -2)}AA`)).toBeUndefined();
    expect(seal.open('EqQBsomething')).toBeUndefined();
    expect(seal.open('gwr1_')).toBeUndefined();
    expect(createReasoningSeal(randomBytes(32)).open(sealed)).toBeUndefined();
    const toolCallId = createToolCallIdCodec(key).conceal('toolu_1');
    expect(seal.open(`gwr1_${toolCallId.slice('call_'.length)}`)).toBeUndefined();
  });
});
