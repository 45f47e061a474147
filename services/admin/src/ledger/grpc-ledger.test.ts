import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { sharedTestPki, testTransportSecurity } from '@gateway/testkit';
import { startFakeLedger, type FakeLedger } from '../test-support/fake-ledger.ts';
import { createGrpcLedger, type GrpcLedger } from './grpc-ledger.ts';

let peer: FakeLedger;
let ledger: GrpcLedger;

beforeAll(async () => {
  peer = await startFakeLedger();
  ledger = createGrpcLedger({ target: peer.target, callTimeoutMs: 2_000, security: testTransportSecurity(await sharedTestPki(), 'admin') });
});

afterAll(async () => {
  ledger?.close();
  await peer?.close();
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(GatewayError);
  return (error as GatewayError).code;
}

describe('the gRPC ledger client', () => {
  it('opens accounts, credits and reads balances to the micro-rupee', async () => {
    await ledger.openAccount('org_aaaaaaaaaaaaaaaaaaaaaaaa');
    await ledger.openAccount('org_aaaaaaaaaaaaaaaaaaaaaaaa'); // idempotent
    expect(await ledger.credit({ creditId: 'c1', organisationId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', amountMicros: 9_007_199_254_740_993n, reason: 'r' }))
      .toEqual({ availableMicros: 9_007_199_254_740_993n });
    expect(await ledger.getBalance('org_aaaaaaaaaaaaaaaaaaaaaaaa')).toEqual({
      organisationId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa',
      creditedMicros: 9_007_199_254_740_993n, availableMicros: 9_007_199_254_740_993n, heldMicros: 0n, debitedMicros: 0n,
    });
  });

  it('maps every non-OK result to its catalogue error', async () => {
    expect(await codeOf(ledger.openAccount(''))).toBe('invalid_request');
    expect(await codeOf(ledger.credit({ creditId: 'c2', organisationId: 'org_bbbbbbbbbbbbbbbbbbbbbbbb', amountMicros: 1n, reason: 'r' }))).toBe('not_found');
    expect(await codeOf(ledger.credit({ creditId: 'c1', organisationId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', amountMicros: 2n, reason: 'r' }))).toBe('idempotency_conflict');
    expect(await codeOf(ledger.credit({ creditId: 'c3', organisationId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', amountMicros: 0n, reason: 'r' }))).toBe('invalid_request');
    expect(await codeOf(ledger.getBalance('org_bbbbbbbbbbbbbbbbbbbbbbbb'))).toBe('not_found');
  });

  it('turns a failed call into service_unavailable, and a ledger that is not there too', async () => {
    peer.failNext('getBalance');
    expect(await codeOf(ledger.getBalance('org_aaaaaaaaaaaaaaaaaaaaaaaa'))).toBe('service_unavailable');
    const nowhere = createGrpcLedger({ target: '127.0.0.1:1', callTimeoutMs: 1_000, security: testTransportSecurity(await sharedTestPki(), 'admin') });
    try {
      expect(await codeOf(nowhere.openAccount('org_aaaaaaaaaaaaaaaaaaaaaaaa'))).toBe('service_unavailable');
    } finally {
      nowhere.close();
    }
  });
});
