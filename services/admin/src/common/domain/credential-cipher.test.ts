import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sealLegacyV1 as sealV1 } from '../../test-support/legacy-seal.ts';
import { createCredentialCipher, encryptionKeyListProblem, encryptionKeyProblem, SealedValueError } from './credential-cipher.ts';

const key = randomBytes(32).toString('base64');
/** The id a key seals under. */
const keyIdOf = (keyBase64: string) => createCredentialCipher(keyBase64).currentKeyId;

/** The error a call throws (fails the test when it throws none). */
function thrown(call: () => unknown): SealedValueError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(SealedValueError);
    return error as SealedValueError;
  }
  throw new Error('expected a SealedValueError');
}

describe('createCredentialCipher', () => {
  it('round-trips a credential as v2 naming its key, and never stores it in the clear', () => {
    const cipher = createCredentialCipher(key);
    const sealed = cipher.encrypt('sk-live-very-secret', 'gateway_models:a');
    expect(sealed).toMatch(/^v2:[0-9a-f]{8}:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(sealed.split(':')[1]).toBe(keyIdOf(key));
    expect(cipher.currentKeyId).toBe(keyIdOf(key));
    expect(sealed).not.toContain('sk-live-very-secret');
    expect(cipher.decrypt(sealed, 'gateway_models:a')).toBe('sk-live-very-secret');
    expect(cipher.open(sealed, 'gateway_models:a')).toEqual({ plaintext: 'sk-live-very-secret', keyId: keyIdOf(key), legacyFormat: false });
  });

  it('uses a fresh 12-byte IV for every value', () => {
    const cipher = createCredentialCipher(key);
    const first = cipher.encrypt('same', 'ctx');
    const second = cipher.encrypt('same', 'ctx');
    expect(first).not.toBe(second);
    expect(Buffer.from(first.split(':')[2]!, 'base64')).toHaveLength(12);
  });

  it('refuses a value moved to another row, altered, or opened with another key', () => {
    const cipher = createCredentialCipher(key);
    const sealed = cipher.encrypt('secret', 'gateway_models:a');
    expect(() => cipher.decrypt(sealed, 'gateway_models:b')).toThrow(/cannot be decrypted/);
    const [version, keyId, iv, tag, body] = sealed.split(':') as [string, string, string, string, string];
    const flipped = Buffer.from(body, 'base64');
    flipped[0]! ^= 1;
    expect(thrown(() => cipher.decrypt([version, keyId, iv, tag, flipped.toString('base64')].join(':'), 'gateway_models:a')).problem).toBe('undecryptable');
    expect(thrown(() => createCredentialCipher(randomBytes(32).toString('base64')).decrypt(sealed, 'gateway_models:a')).problem).toBe('unknown_key');
    expect(thrown(() => cipher.decrypt('v2:a:b:c', 'gateway_models:a')).problem).toBe('unknown_format');
    expect(thrown(() => cipher.decrypt('v3:00000000:a:b:c', 'gateway_models:a')).problem).toBe('unknown_format');
  });

  it('opens values sealed under a previous key, and old v1 values under any configured key, saying which key opened them', () => {
    const oldKey = randomBytes(32).toString('base64');
    const older = createCredentialCipher(oldKey);
    const sealedV2 = older.encrypt('webhook-secret', 'alert_webhooks:org_1');
    const sealedV1 = sealV1(oldKey, 'sk-legacy', 'gateway_models:a');
    const currentV1 = sealV1(key, 'sk-current-legacy', 'gateway_models:b');

    const rotated = createCredentialCipher(key, [oldKey]);
    expect(rotated.open(sealedV2, 'alert_webhooks:org_1')).toEqual({ plaintext: 'webhook-secret', keyId: keyIdOf(oldKey), legacyFormat: false });
    expect(rotated.open(sealedV1, 'gateway_models:a')).toEqual({ plaintext: 'sk-legacy', keyId: keyIdOf(oldKey), legacyFormat: true });
    expect(rotated.open(currentV1, 'gateway_models:b')).toEqual({ plaintext: 'sk-current-legacy', keyId: keyIdOf(key), legacyFormat: true });
    // It seals under the current key only.
    expect(rotated.encrypt('x', 'c').split(':')[1]).toBe(keyIdOf(key));

    // Without the old key: the v2 value names the missing key id (never a key); the v1 value opens with nothing.
    const dropped = createCredentialCipher(key);
    const missing = thrown(() => dropped.decrypt(sealedV2, 'alert_webhooks:org_1'));
    expect([missing.problem, missing.keyId]).toEqual(['unknown_key', keyIdOf(oldKey)]);
    expect(missing.message).toContain(keyIdOf(oldKey));
    expect(missing.message).not.toContain(oldKey);
    expect(missing.message).not.toContain(key);
    expect(thrown(() => dropped.decrypt(sealedV1, 'gateway_models:a')).problem).toBe('undecryptable');
  });

  it('takes a previous key equal to the current one as harmless', () => {
    const cipher = createCredentialCipher(key, [key]);
    expect(cipher.decrypt(cipher.encrypt('x', 'c'), 'c')).toBe('x');
  });

  it('refuses a malformed previous key by position, without echoing it', () => {
    const short = randomBytes(8).toString('base64');
    expect(() => createCredentialCipher(key, [randomBytes(32).toString('base64'), short])).toThrow(/ADMIN_ENCRYPTION_KEYS_PREVIOUS: entry 2 must decode/);
    expect(() => createCredentialCipher(key, [short])).not.toThrow(new RegExp(short.replace(/[+/=]/g, '.')));
  });
});

describe('key ids', () => {
  it('are the first 8 hex digits of SHA-256 over the purpose label and the key: stable for a key, different between keys', () => {
    // Pinned: stored values name their key by this id, so a change here would orphan every one of them.
    const fixed = Buffer.alloc(32, 7).toString('base64');
    expect(keyIdOf(fixed)).toBe(createHash('sha256').update('gateway/admin-encryption-key-id/v1\0').update(Buffer.alloc(32, 7)).digest('hex').slice(0, 8));
    const other = randomBytes(32).toString('base64');
    expect(keyIdOf(key)).toMatch(/^[0-9a-f]{8}$/);
    expect(keyIdOf(` ${key} `)).toBe(keyIdOf(key));
    expect(keyIdOf(other)).not.toBe(keyIdOf(key));
    expect(Buffer.from(key, 'base64').toString('hex')).not.toContain(keyIdOf(key));
  });
});

describe('encryptionKeyProblem', () => {
  it('accepts base64 of exactly 32 bytes and refuses anything else without echoing it', () => {
    expect(encryptionKeyProblem(key)).toBeUndefined();
    expect(encryptionKeyProblem(randomBytes(16).toString('base64'))).toMatch(/exactly 32 bytes/);
    const notBase64 = 'this is not base64 at all!';
    expect(encryptionKeyProblem(notBase64)).toMatch(/base64/);
    expect(encryptionKeyProblem(notBase64)).not.toContain(notBase64);
  });
});

describe('encryptionKeyListProblem', () => {
  it('accepts an empty list and a list of good keys; names each bad entry by position', () => {
    expect(encryptionKeyListProblem('')).toBeUndefined();
    expect(encryptionKeyListProblem(`${key}, ${randomBytes(32).toString('base64')}`)).toBeUndefined();
    expect(encryptionKeyListProblem(`${key},nope!,${randomBytes(4).toString('base64')}`)).toMatch(/entry 2 must be base64.*entry 3 must decode/);
  });
});
