import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureMatches } from '../../test-support/alert-receiver.ts';
import { newSigningSecret, signatureHeader, signingSecretHint } from './webhook-signature.ts';

describe('webhook signature', () => {
  it('is t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"> keyed with the whole secret', () => {
    const secret = 'whsec_test-secret';
    const body = '{"id":"alrt_0123456789abcdef01234567","type":"test"}';
    const expected = createHmac('sha256', secret).update(`1700000000.${body}`).digest('hex');
    expect(signatureHeader(secret, body, 1_700_000_000)).toBe(`t=1700000000,v1=${expected}`);
  });

  it('matches its own body and secret, within the tolerance only', () => {
    const secret = newSigningSecret();
    const header = signatureHeader(secret, 'body', 1_000);
    expect(signatureMatches(secret, 'body', header, 1_000)).toBe(true);
    expect(signatureMatches(secret, 'body', header, 1_300)).toBe(true);
    expect(signatureMatches(secret, 'body', header, 1_301)).toBe(false);
    expect(signatureMatches(secret, 'body!', header, 1_000)).toBe(false);
    expect(signatureMatches(newSigningSecret(), 'body', header, 1_000)).toBe(false);
    expect(signatureMatches(secret, 'body', header.replace('t=1000', 't=1001'), 1_000)).toBe(false);
    expect(signatureMatches(secret, 'body', 'v1=00', 1_000)).toBe(false);
  });

  it('makes distinct 32-byte secrets and hints that keep only the last four characters', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newSigningSecret()).not.toBe(secret);
    expect(signingSecretHint(secret)).toBe(`whsec_…${secret.slice(-4)}`);
  });
});
