import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { BodyByteBudget } from './body-byte-budget.ts';

const maxBodyBytes = 1000;

function refusal(budget: BodyByteBudget, headers: Record<string, string>): GatewayError | undefined {
  try {
    budget.take(headers);
    return undefined;
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
}

describe('BodyByteBudget', () => {
  it('holds an identity body at its Content-Length, and a compressed or chunked one at the whole per-body limit', () => {
    const budget = new BodyByteBudget(10_000, maxBodyBytes);
    const cases: Array<[Record<string, string>, number]> = [
      [{ 'content-length': '300' }, 300],
      [{ 'content-length': '300', 'content-encoding': 'identity' }, 300],
      [{ 'content-length': '300', 'content-encoding': 'gzip' }, maxBodyBytes],
      [{ 'content-length': '300', 'content-encoding': ' BR ' }, maxBodyBytes],
      [{ 'transfer-encoding': 'chunked' }, maxBodyBytes],
      [{ 'transfer-encoding': 'chunked', 'content-encoding': 'deflate' }, maxBodyBytes],
      // Refused before a byte is read (413 for the length, 415 for the coding), or no body at all: nothing held.
      [{ 'content-length': String(maxBodyBytes + 1) }, 0],
      [{ 'content-length': '300', 'content-encoding': 'zstd' }, 0],
      [{ 'content-length': '0' }, 0],
      [{}, 0],
    ];
    for (const [headers, held] of cases) {
      const giveBack = budget.take(headers);
      expect(budget.inUseBytes, JSON.stringify(headers)).toBe(held);
      giveBack();
      expect(budget.inUseBytes).toBe(0);
    }
  });

  it('refuses a body that does not fit with a retryable 503 and retry-after: 1, taking nothing', () => {
    const budget = new BodyByteBudget(2500, maxBodyBytes);
    const first = budget.take({ 'transfer-encoding': 'chunked' });
    budget.take({ 'content-length': '1000', 'content-encoding': 'gzip' });
    const refused = refusal(budget, { 'transfer-encoding': 'chunked' });
    expect(refused).toMatchObject({ code: 'service_unavailable', headers: { 'retry-after': '1' } });
    expect(refused!.publicMessage).not.toMatch(/\d/); // nothing about this process's figures
    expect(budget.inUseBytes).toBe(2000);
    // A small identity body still fits in what is left.
    expect(refusal(budget, { 'content-length': '500' })).toBeUndefined();
    expect(refusal(budget, { 'content-length': '1' })).toBeDefined();
    // Given back (once, however often called), the next large body fits again.
    first();
    first();
    expect(budget.inUseBytes).toBe(1500);
    expect(refusal(budget, { 'transfer-encoding': 'chunked' })).toBeUndefined();
  });

  it('needs room for at least one body of the largest size', () => {
    expect(() => new BodyByteBudget(maxBodyBytes - 1, maxBodyBytes)).toThrow(RangeError);
  });
});
