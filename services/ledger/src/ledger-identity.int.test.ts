import { credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { callUnary } from '@gateway/grpc';
import { testPostgresUrl } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();
const deadlineMs = 5_000;

/** The error a call ended with, or undefined when it succeeded. */
function failureOf(call: Promise<unknown>): Promise<ServiceError | undefined> {
  return call.then(() => undefined, (error: unknown) => error as ServiceError);
}

/** A Credit of ₹1,000,000 (10^12 µ₹), the call an attacker with a stolen key would make. */
function millionRupeeCredit(organisationId: string): ledgerV1.CreditRequest {
  return { creditId: uniqueId('mint'), organisationId, amountMicros: 1_000_000_000_000n, reason: 'free money', purchased: false };
}

/**
 * Service identity of the ledger: only the admin's certificate may
 * credit; a caller without TLS, with a certificate of another CA, with no identity or with the
 * proxy's identity gets nothing, and the balance does not move by one µ₹.
 */
describe('ledger service identity (mTLS, per-method roles)', () => {
  const ledger = useTestLedger(serverUrl ? 'postgres' : 'pglite', { serverUrl });
  let organisationId: string;
  const opened: ledgerV1.LedgerServiceClient[] = [];

  beforeAll(async () => {
    organisationId = await fundedOrganisation(ledger, 5_000_000n);
  }, 60_000);

  afterAll(async () => {
    for (const client of opened) client.close();
  });

  const target = () => `127.0.0.1:${ledger.app.ports.grpc}`;
  const track = (client: ledgerV1.LedgerServiceClient) => { opened.push(client); return client; };
  const unchanged = { creditedMicros: 5_000_000n, availableMicros: 5_000_000n, heldMicros: 0n, debitedMicros: 0n };

  it('refuses a plaintext client (no TLS at all) and credits nothing', async () => {
    const client = track(new ledgerV1.LedgerServiceClient(target(), credentials.createInsecure()));
    const error = await failureOf(callUnary(client.credit, client, millionRupeeCredit(organisationId), deadlineMs));
    expect(error?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(await balancesOf(ledger, organisationId)).toEqual(unchanged);
  });

  it('refuses a client whose certificate another CA signed (even with the proxy URI) and credits nothing', async () => {
    const client = track(ledger.clientAs('stranger'));
    const error = await failureOf(callUnary(client.credit, client, millionRupeeCredit(organisationId), deadlineMs));
    expect(error?.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(await balancesOf(ledger, organisationId)).toEqual(unchanged);
  });

  it('answers UNAUTHENTICATED to a certificate of the right CA that names no identity', async () => {
    const client = track(ledger.clientAs('nobody'));
    const error = await failureOf(callUnary(client.credit, client, millionRupeeCredit(organisationId), deadlineMs));
    expect(error?.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(await balancesOf(ledger, organisationId)).toEqual(unchanged);
  });

  it('answers PERMISSION_DENIED to the proxy identity calling Credit, and credits nothing', async () => {
    const error = await failureOf(callUnary(ledger.client.credit, ledger.client, millionRupeeCredit(organisationId), deadlineMs));
    expect(error?.code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(error?.details).toBe('This service identity may not call this method.');
    expect(await balancesOf(ledger, organisationId)).toEqual(unchanged);
    const openAccount = await failureOf(callUnary(ledger.client.openAccount, ledger.client, { organisationId: uniqueId('org') }, deadlineMs));
    expect(openAccount?.code).toBe(GrpcStatus.PERMISSION_DENIED);
  });

  it('refuses streams too: the admin may not open Operate, the proxy may not watch budget alerts', async () => {
    const operate = ledger.adminClient.operate();
    const operateEnd = new Promise<ServiceError>((resolve) => operate.on('error', resolve));
    operate.write(ledgerV1.OperationRequest.fromPartial({ callId: 1n, requestId: 'req-1', reserve: {
      reservationId: uniqueId('res'), organisationId, projectId: 'p', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
      amountMicros: 1_000_000n, ttlMs: 60_000n, modelSlug: 'model-a',
    } }));
    expect((await operateEnd).code).toBe(GrpcStatus.PERMISSION_DENIED);

    const watch = ledger.client.watchBudgetAlerts({ afterId: '' });
    const watchEnd = new Promise<ServiceError>((resolve) => watch.on('error', resolve));
    expect((await watchEnd).code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(await balancesOf(ledger, organisationId)).toEqual(unchanged);
  });

  it('lets the admin identity credit, and the proxy identity reserve', async () => {
    const credited = await callUnary(ledger.adminClient.credit, ledger.adminClient, { ...millionRupeeCredit(organisationId), amountMicros: 2_000_000n }, deadlineMs);
    expect(credited.result).toBe(ledgerV1.CreditResult.CREDIT_RESULT_OK);
    const reserved = await ledger.reserve({ organisationId, amountMicros: 1_000_000n });
    expect(reserved.result).toBe(ledgerV1.ReserveResult.RESERVE_RESULT_OK);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 7_000_000n, availableMicros: 6_000_000n, heldMicros: 1_000_000n, debitedMicros: 0n,
    });
  });
});
