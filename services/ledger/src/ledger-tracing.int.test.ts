import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metadata, type ClientDuplexStream } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { startTracing } from '@gateway/telemetry';
import { otlpSpanKind, startOtlpReceiver, testPostgresUrl, type OtlpReceiver } from '@gateway/testkit';
import { startTestLedger, uniqueId, type TestLedger } from './testing/start-test-ledger.ts';

const serverUrl = testPostgresUrl();
const ledgerService = 'gateway.ledger.v1.LedgerService';
/** Callers' spans, as a proxy or an admin would send them. */
const callerTraceparent = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;
const [traceA, spanA] = ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1', 'aaaaaaaaaaaaaaa1'];
const [traceB, spanB] = ['bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2', 'bbbbbbbbbbbbbbb2'];
const [traceC, spanC] = ['ccccccccccccccccccccccccccccccc3', 'ccccccccccccccc3'];
const [traceD, spanD] = ['ddddddddddddddddddddddddddddddd4', 'ddddddddddddddd4'];

/** A unary call with `traceparent` metadata (or none); resolves once answered. */
function callWith<Req, Res>(
  method: (request: Req, metadata: Metadata, callback: (error: unknown, response: Res) => void) => unknown, client: object, request: Req, traceparent?: string,
): Promise<Res> {
  const metadata = new Metadata();
  if (traceparent !== undefined) metadata.set('traceparent', traceparent);
  return new Promise((resolve, reject) => {
    method.call(client, request, metadata, (error: unknown, response: Res) => (error ? reject(error) : resolve(response)));
  });
}

describe.skipIf(!serverUrl)('ledger spans continue the caller trace', () => {
  let receiver: OtlpReceiver;
  let ledger: TestLedger;
  const organisationId = uniqueId('trace-org');

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const tracing = startTracing('ledger', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
    ledger = await startTestLedger('postgres', { serverUrl, tracing });

    // Unary: OpenAccount with the caller's context; GetBalance (a polled read) without and with one.
    await callWith(ledger.adminClient.openAccount, ledger.adminClient, { organisationId }, callerTraceparent(traceA, spanA));
    await callWith(ledger.adminClient.getBalance, ledger.adminClient, { organisationId });
    await callWith(ledger.adminClient.getBalance, ledger.adminClient, { organisationId }, callerTraceparent(traceD, spanD));

    // Operate: a Reserve refused for balance (its outcome on the span), a malformed context, and a
    // settle_batch whose Settles belong to two traces.
    const stream: ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse> = ledger.client.operate();
    const answers = new Map<bigint, ledgerV1.OperationResponse>();
    const answered = (count: number) => new Promise<void>((resolve) => {
      stream.on('data', (response: ledgerV1.OperationResponse) => { answers.set(response.callId, response); if (answers.size === count) resolve(); });
    });
    const allAnswered = answered(3);
    const reserve = {
      organisationId, projectId: 'p', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL, amountMicros: 5n, ttlMs: 60_000n, modelSlug: 'm',
    };
    stream.write({ callId: 1n, requestId: '', traceparent: callerTraceparent(traceB, spanB), reserve: { ...reserve, reservationId: uniqueId('r') } });
    stream.write({ callId: 2n, requestId: '', traceparent: 'not-a-traceparent', reserve: { ...reserve, reservationId: uniqueId('r') } });
    const settle = (traceparent: string) => ({
      reservationId: uniqueId('unknown'), inputTokens: 1n, outputTokens: 1n, costMicros: 1n, providerCostMicros: 0n, modelSlug: 'm',
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'r', overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [], traceparent,
    });
    stream.write({ callId: 3n, requestId: '', settleBatch: { settles: [settle(callerTraceparent(traceC, spanC)), settle(callerTraceparent(traceB, spanB))] } });
    await allAnswered;
    stream.end();
    // Closing the ledger shuts its tracing down, which exports every span it holds.
    await ledger.close();
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
  });

  it('makes a unary call a SERVER span under the caller span from traceparent metadata', () => {
    const openAccount = receiver.spans().find((span) => span.name === `${ledgerService}/OpenAccount`);
    expect(openAccount).toMatchObject({
      serviceName: 'inr-gateway-ledger', kind: otlpSpanKind.server, traceId: traceA, parentSpanId: spanA,
      attributes: { 'rpc.method': `${ledgerService}/OpenAccount`, 'rpc.status_code': 'OK', 'gateway.ledger.transport': 'unary', 'gateway.ledger.outcome': 'ok' },
    });
  });

  it('traces a polled read only inside a caller trace', () => {
    const reads = receiver.spans().filter((span) => span.name === `${ledgerService}/GetBalance`);
    expect(reads.map((span) => [span.traceId, span.parentSpanId])).toEqual([[traceD, spanD]]);
  });

  it('makes an Operate message a SERVER span under the message traceparent, with the domain outcome', () => {
    const reserves = receiver.spans().filter((span) => span.name === `${ledgerService}/Reserve`);
    const continued = reserves.find((span) => span.traceId === traceB);
    expect(continued).toMatchObject({
      parentSpanId: spanB,
      attributes: { 'rpc.method': `${ledgerService}/Operate`, 'gateway.ledger.transport': 'operate', 'gateway.ledger.outcome': 'insufficient_balance' },
    });
    // A malformed context starts a new trace rather than failing the operation.
    const fresh = reserves.find((span) => span.traceId !== traceB);
    expect(fresh).toMatchObject({ parentSpanId: '', attributes: { 'gateway.ledger.outcome': 'insufficient_balance' } });
  });

  it('makes a settle_batch one root span linking every Settle trace', () => {
    const batch = receiver.spans().find((span) => span.name === `${ledgerService}/SettleBatch`);
    expect(batch).toMatchObject({ parentSpanId: '', attributes: { 'gateway.ledger.batch_size': 2, 'rpc.status_code': 'OK' } });
    expect(batch!.links).toEqual([{ traceId: traceC, spanId: spanC }, { traceId: traceB, spanId: spanB }]);
  });
});
