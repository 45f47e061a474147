import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCredentialCipher, encryptionKeyProblem } from './credential-cipher.ts';

const key = randomBytes(32).toString('base64');

describe('createCredentialCipher', () => {
  it('round-trips a credential and never stores it in the clear', () => {
    const cipher = createCredentialCipher(key);
    const sealed = cipher.encrypt('sk-live-very-secret', 'gateway_models:a');
    expect(sealed).toMatch(/^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(sealed).not.toContain('sk-live-very-secret');
    expect(cipher.decrypt(sealed, 'gateway_models:a')).toBe('sk-live-very-secret');
  });

  it('uses a fresh 12-byte IV for every value', () => {
    const cipher = createCredentialCipher(key);
    const first = cipher.encrypt('same', 'ctx');
    const second = cipher.encrypt('same', 'ctx');
    expect(first).not.toBe(second);
    expect(Buffer.from(first.split(':')[1]!, 'base64')).toHaveLength(12);
  });

  it('refuses a value moved to another row, altered, or opened with another key', () => {
    const cipher = createCredentialCipher(key);
    const sealed = cipher.encrypt('secret', 'gateway_models:a');
    expect(() => cipher.decrypt(sealed, 'gateway_models:b')).toThrow(/cannot be decrypted/);
    const [version, iv, tag, body] = sealed.split(':') as [string, string, string, string];
    const flipped = Buffer.from(body, 'base64');
    flipped[0]! ^= 1;
    expect(() => cipher.decrypt([version, iv, tag, flipped.toString('base64')].join(':'), 'gateway_models:a')).toThrow(/cannot be decrypted/);
    expect(() => createCredentialCipher(randomBytes(32).toString('base64')).decrypt(sealed, 'gateway_models:a')).toThrow(/cannot be decrypted/);
    expect(() => cipher.decrypt('v2:a:b:c', 'gateway_models:a')).toThrow(/unknown format/);
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
