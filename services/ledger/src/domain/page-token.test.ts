import { describe, expect, it } from 'vitest';
import { decodePageToken, encodePageToken } from './page-token.ts';

describe('page tokens', () => {
  it('round-trip a cursor exactly, beyond float precision', () => {
    const cursor = { createdAtMicros: 1_795_264_123_360_123n, id: 9_007_199_254_740_993n };
    const token = encodePageToken(cursor);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodePageToken(token)).toEqual(cursor);
  });

  it('refuses anything that is not one of ours', () => {
    const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const bad of [
      '', 'not a token!', 'e30', forge([2, '1', '1']), forge([1, 1, 1]), forge([1, '-1', '1']),
      forge([1, '1', '9223372036854775808']), forge([1, '1']), 'x'.repeat(300),
    ]) {
      expect(decodePageToken(bad), bad).toBeUndefined();
    }
  });
});
