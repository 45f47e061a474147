import { describe, expect, it } from 'vitest';
import { grpcBindAddress } from './index.ts';

describe('grpcBindAddress', () => {
  it('brackets IPv6 literals and leaves IPv4 addresses and names alone', () => {
    expect(grpcBindAddress('fd00::12', 50051)).toBe('[fd00::12]:50051');
    expect(grpcBindAddress('::', 0)).toBe('[::]:0');
    expect(grpcBindAddress('[::1]', 50051)).toBe('[::1]:50051');
    expect(grpcBindAddress('10.1.2.3', 50051)).toBe('10.1.2.3:50051');
    expect(grpcBindAddress('ledger', 50051)).toBe('ledger:50051');
  });
});
