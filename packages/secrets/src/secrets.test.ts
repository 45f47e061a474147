import { describe, expect, it } from 'vitest';
import { bearerTokenOf, hashesEqual, hashSecret, hintOf, isWellFormedSecret, issueSecret } from './index.ts';

describe('issued secrets', () => {
  it('carry the prefix, pass their own checksum and hash to what is stored', () => {
    const key = issueSecret('apiKey');
    expect(key.secret).toMatch(/^gwsk_[A-Za-z0-9_-]{49}$/);
    expect(isWellFormedSecret('apiKey', key.secret)).toBe(true);
    expect(key.hash).toBe(hashSecret(key.secret));
    expect(key.hint).toBe(`gwsk_…${key.secret.slice(-4)}`);
    expect(key.hint).not.toContain(key.secret.slice(5, 20));
  });

  it('are all different', () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => issueSecret('apiKey').secret));
    expect(secrets.size).toBe(1000);
  });

  it('refuse a mistyped character, a truncation, or the wrong kind without a lookup', () => {
    const { secret } = issueSecret('apiKey');
    const index = 20;
    const typo = secret.slice(0, index) + (secret[index] === 'a' ? 'b' : 'a') + secret.slice(index + 1);
    expect(isWellFormedSecret('apiKey', typo)).toBe(false);
    expect(isWellFormedSecret('apiKey', secret.slice(0, -1))).toBe(false);
    expect(isWellFormedSecret('adminToken', secret)).toBe(false);
    expect(isWellFormedSecret('adminToken', issueSecret('adminToken').secret)).toBe(true);
    expect(isWellFormedSecret('apiKey', 'sk-proj-whatever')).toBe(false);
  });
});

describe('hashesEqual', () => {
  it('compares hex hashes', () => {
    const hash = hashSecret('x');
    expect(hashesEqual(hash, hashSecret('x'))).toBe(true);
    expect(hashesEqual(hash, hashSecret('y'))).toBe(false);
    expect(hashesEqual(hash, '')).toBe(false);
  });
});

describe('bearerTokenOf', () => {
  it('reads Bearer values only', () => {
    expect(bearerTokenOf('Bearer abc')).toBe('abc');
    expect(bearerTokenOf('bearer abc')).toBe('abc');
    expect(bearerTokenOf('Basic abc')).toBeUndefined();
    expect(bearerTokenOf('Bearer a b')).toBeUndefined();
    expect(bearerTokenOf(undefined)).toBeUndefined();
    expect(hintOf('gwadm_abcdefgh')).toBe('gwadm_…efgh');
  });
});
