import { describe, expect, it } from 'vitest';
import { fingerprintOf } from './fingerprint.ts';

describe('fingerprintOf', () => {
  it('is the same for equal payloads whatever the key order', () => {
    expect(fingerprintOf('reserve', { a: 1n, b: 'x' })).toBe(fingerprintOf('reserve', { b: 'x', a: 1n }));
  });

  it('differs when any field, or the operation, differs', () => {
    const base = fingerprintOf('reserve', { amount: 100n, org: 'o1' });
    expect(fingerprintOf('reserve', { amount: 101n, org: 'o1' })).not.toBe(base);
    expect(fingerprintOf('reserve', { amount: 100n, org: 'o2' })).not.toBe(base);
    expect(fingerprintOf('credit', { amount: 100n, org: 'o1' })).not.toBe(base);
  });

  it('does not confuse a bigint with the string of its digits, nor null with empty', () => {
    expect(fingerprintOf('x', { v: 1n })).not.toBe(fingerprintOf('x', { v: '1' }));
    expect(fingerprintOf('x', { v: null })).not.toBe(fingerprintOf('x', { v: '' }));
  });
});
