import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveCacheScopeKey } from './cache-scope-key.ts';
import { deriveToolCallIdKey } from './tool-call-id-key.ts';

/** HKDF-SHA256 (RFC 5869) for one 32-byte block, written out with HMAC, independently of node's hkdf. */
function hkdfOneBlock(inputKey: Buffer, info: string): Buffer {
  const pseudoRandomKey = createHmac('sha256', Buffer.alloc(32)).update(inputKey).digest(); // extract, empty salt = 32 zero bytes
  return createHmac('sha256', pseudoRandomKey).update(Buffer.concat([Buffer.from(info), Buffer.of(1)])).digest(); // expand, T(1)
}

describe('deriveToolCallIdKey', () => {
  it('is HKDF-SHA256 of ADMIN_ENCRYPTION_KEY with the purpose as info: 32 bytes, the same on every replica and restart', () => {
    const encryptionKey = randomBytes(32);
    const derived = deriveToolCallIdKey(encryptionKey.toString('base64'));
    expect(derived).toEqual(hkdfOneBlock(encryptionKey, 'gateway/tool-call-id-key/v1'));
    expect(derived.length).toBe(32);
    expect(deriveToolCallIdKey(`${encryptionKey.toString('base64')}\n`)).toEqual(derived);
    expect(derived.equals(encryptionKey)).toBe(false);
  });

  it('changes with ADMIN_ENCRYPTION_KEY (a rotation invalidates outstanding ids)', () => {
    expect(deriveToolCallIdKey(randomBytes(32).toString('base64'))).not.toEqual(deriveToolCallIdKey(randomBytes(32).toString('base64')));
  });
});

describe('deriveCacheScopeKey', () => {
  it('is HKDF-SHA256 of ADMIN_ENCRYPTION_KEY under its own purpose: apart from the tool-call id key', () => {
    const encryptionKey = randomBytes(32);
    const derived = deriveCacheScopeKey(encryptionKey.toString('base64'));
    expect(derived).toEqual(hkdfOneBlock(encryptionKey, 'gateway/cache-scope-key/v1'));
    expect(derived.equals(deriveToolCallIdKey(encryptionKey.toString('base64')))).toBe(false);
  });
});
