import { X509Certificate } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { status as GrpcStatus, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { callUnary } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { createServiceMetrics } from '@gateway/telemetry';
import { parsePrometheusText, scrapeMetrics, sumSamples, testPostgresUrl, type PrometheusSample } from '@gateway/testkit';
import { startExpirySweeper } from './expiry-sweeper.ts';
import { ledgerRpcMethods } from './transport/rpc-metrics.ts';
import { fundedOrganisation, startTestLedger, uniqueId, type TestLedger } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();
const { ReserveResult, SettleResult, UsageSource } = ledgerV1;

type OperateStream = ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>;

/** The ledger's /metrics as samples. */
function scrape(ledger: TestLedger): Promise<PrometheusSample[]> {
  return scrapeMetrics(`http://127.0.0.1:${ledger.app.ports.metrics}/metrics`);
}

/** How much each series selected by (name, labels) grew between two scrapes. */
function grew(before: PrometheusSample[], after: PrometheusSample[], name: string, labels: Record<string, string> = {}): number {
  return sumSamples(after, name, labels) - sumSamples(before, name, labels);
}

/** Sends Operate messages on one stream and resolves each with its answer, by call id. */
function operateOn(stream: OperateStream) {
  const waiting = new Map<bigint, (answer: ledgerV1.OperationResponse) => void>();
  stream.on('data', (response: ledgerV1.OperationResponse) => { waiting.get(response.callId)?.(response); });
  let nextCallId = 1n;
  return (message: Omit<ledgerV1.OperationRequest, 'callId' | 'requestId'>): Promise<ledgerV1.OperationResponse> => {
    const callId = nextCallId++;
    const answered = new Promise<ledgerV1.OperationResponse>((resolve) => { waiting.set(callId, resolve); });
    stream.write({ callId, requestId: '', ...message });
    return answered;
  };
}

const settleOf = (reservationId: string, costMicros: bigint): ledgerV1.SettleRequest => ({
  reservationId, inputTokens: 10n, outputTokens: 20n, costMicros, providerCostMicros: 0n, modelSlug: 'model-a',
  usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: uniqueId('req'), overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [],
});

describe.skipIf(!serverUrl)('ledger /metrics', () => {
  // The app's own sweeper passes once at start, then not for an hour: the holds test drives its own.
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 3_600_000 });

  it('counts every unary call and Operate operation by method and gRPC code, and each group commit by operation', async () => {
    const before = await scrape(ledger);
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);

    // Unary: one Reserve and its Settle, then 16 Reserves at once (the batcher may group them),
    // and a Reserve from the admin's identity, which the ledger refuses before it runs.
    const alone = uniqueId('res');
    expect((await ledger.reserve({ reservationId: alone, organisationId, amountMicros: 1_000n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    expect((await ledger.settle(settleOf(alone, 600n))).result).toBe(SettleResult.SETTLE_RESULT_OK);
    const together = await Promise.all(Array.from({ length: 16 }, () => ledger.reserve({ organisationId, amountMicros: 100n })));
    expect(together.every((answer) => answer.result === ReserveResult.RESERVE_RESULT_OK)).toBe(true);
    const refused = await callUnary(ledger.adminClient.reserve, ledger.adminClient, ledgerV1.ReserveRequest.fromPartial({
      reservationId: uniqueId('res'), organisationId, amountMicros: 1n, ttlMs: 60_000n,
    }), 10_000).then(() => undefined, (error: unknown) => error as ServiceError);
    expect(refused?.code).toBe(GrpcStatus.PERMISSION_DENIED);

    // Operate: two reserves, one settle_batch of both, and a message that names no operation.
    const stream: OperateStream = ledger.client.operate();
    const send = operateOn(stream);
    try {
      const [first, second] = [uniqueId('res'), uniqueId('res')];
      const reserveMessage = (reservationId: string) => ({
        reserve: ledgerV1.ReserveRequest.fromPartial({
          reservationId, organisationId, projectId: 'project-1', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
          amountMicros: 500n, ttlMs: 60_000n, modelSlug: 'model-a',
        }),
      });
      const reserved = await Promise.all([send(reserveMessage(first)), send(reserveMessage(second))]);
      expect(reserved.map((answer) => answer.reserve?.result)).toEqual([ReserveResult.RESERVE_RESULT_OK, ReserveResult.RESERVE_RESULT_OK]);
      const batch = await send({ settleBatch: { settles: [settleOf(first, 300n), settleOf(second, 200n)] } });
      expect(batch.settleBatch?.settles.map((answer) => answer.result)).toEqual([SettleResult.SETTLE_RESULT_OK, SettleResult.SETTLE_RESULT_OK]);
      const empty = await send({});
      expect(empty.error?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    } finally {
      stream.end();
    }

    const after = await scrape(ledger);
    const calls = 'gateway_ledger_rpc_requests_total';
    expect(grew(before, after, calls, { method: 'OpenAccount', operation: '', code: 'OK' })).toBe(1);
    expect(grew(before, after, calls, { method: 'Credit', code: 'OK' })).toBe(1);
    expect(grew(before, after, calls, { method: 'Reserve', code: 'OK' })).toBe(17);
    expect(grew(before, after, calls, { method: 'Reserve', code: 'PERMISSION_DENIED' })).toBe(1);
    expect(grew(before, after, calls, { method: 'Settle', code: 'OK' })).toBe(1);
    expect(grew(before, after, calls, { method: 'Operate', operation: 'reserve', code: 'OK' })).toBe(2);
    expect(grew(before, after, calls, { method: 'Operate', operation: 'settle_batch', code: 'OK' })).toBe(1);
    expect(grew(before, after, calls, { method: 'Operate', operation: 'none', code: 'INVALID_ARGUMENT' })).toBe(1);
    // One spelling: every `method` is a LedgerService method as the proto names it.
    expect([...new Set(after.filter((sample) => sample.name === calls).map((sample) => sample.labels.method))].filter((method) => !ledgerRpcMethods.includes(method!))).toEqual([]);
    // Each answer has its latency observed once.
    expect(grew(before, after, 'gateway_ledger_rpc_duration_seconds_count', { method: 'Reserve', operation: '' })).toBe(18);
    expect(grew(before, after, 'gateway_ledger_rpc_duration_seconds_count', { method: 'Operate', operation: 'settle_batch' })).toBe(1);

    // Group commit: 19 Reserves and 3 Settles went through the batcher (the refused one never
    // reached it); every transaction is observed once in both histograms, whatever the grouping.
    const sizes = 'gateway_ledger_batch_size';
    expect(grew(before, after, `${sizes}_sum`, { operation: 'reserve' })).toBe(19);
    expect(grew(before, after, `${sizes}_sum`, { operation: 'settle' })).toBe(3);
    expect(grew(before, after, `${sizes}_sum`, { operation: 'mixed' })).toBe(0);
    const transactions = grew(before, after, `${sizes}_count`);
    // At least one each: the lone Reserve, its Settle, the 16, the stream's two Reserves, its two Settles.
    expect(transactions).toBeGreaterThanOrEqual(5);
    expect(transactions).toBeLessThanOrEqual(22);
    expect(grew(before, after, 'gateway_ledger_commit_duration_seconds_count')).toBe(transactions);
    // A batch of one lands in the first bucket (le="1"); no transaction held more than 16.
    expect(grew(before, after, `${sizes}_bucket`, { le: '16' })).toBe(transactions);

    // No series carries a customer's id.
    const text = await (await fetch(`http://127.0.0.1:${ledger.app.ports.metrics}/metrics`)).text();
    expect(text).not.toContain(organisationId);
    expect(text).not.toContain(alone);
  });

  it('counts sweeper passes and expiries, and the holds a sweeper leaves past their deadline', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000n);
    const overdue = [uniqueId('overdue'), uniqueId('overdue')];
    for (const reservationId of overdue) await ledger.reserve({ reservationId, organisationId, amountMicros: 100n });
    // Two hours past their deadline: more than one sweep interval (one hour here).
    await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '2 hours' WHERE id = ANY($1)", [overdue]);

    // A sweeper that resolves one reservation per pass cannot keep up with two.
    const metrics = createServiceMetrics('ledger');
    const sweeper = startExpirySweeper({
      database: ledger.database, logger: createLogger('ledger', 'silent'), intervalMs: 3_600_000, batchSize: 1, maxBatchesPerPass: 1, metrics,
    });
    try {
      const samples = async () => parsePrometheusText(await metrics.render());
      await vi.waitFor(async () => { expect(sumSamples(await samples(), 'gateway_ledger_sweeper_passes_total')).toBe(1); });
      let now = await samples();
      expect(sumSamples(now, 'gateway_ledger_sweeper_passes_total', { outcome: 'ok' })).toBe(1);
      expect(sumSamples(now, 'gateway_ledger_sweeper_expired_total', { kind: 'reservation' })).toBe(1);
      expect(sumSamples(now, 'gateway_ledger_holds_past_deadline', { kind: 'reservation' })).toBe(1);
      expect(sumSamples(now, 'gateway_ledger_holds_past_deadline', { kind: 'grant' })).toBe(0);
      expect(sumSamples(now, 'gateway_ledger_sweeper_pass_duration_seconds_count')).toBe(1);

      // The next pass resolves the other: nothing is left behind.
      expect(await sweeper.sweepNow()).toBe(1);
      now = await samples();
      expect(sumSamples(now, 'gateway_ledger_sweeper_expired_total', { kind: 'reservation' })).toBe(2);
      expect(sumSamples(now, 'gateway_ledger_holds_past_deadline', { kind: 'reservation' })).toBe(0);
      const { rows } = await ledger.database.query<{ status: string }>('SELECT status FROM reservations WHERE id = ANY($1)', [overdue]);
      expect(rows.map((row) => row.status)).toEqual(['expired', 'expired']);
    } finally {
      await sweeper.stop();
    }
  });

  it('counts what the ledger\'s own sweeper expires, on its /metrics', async () => {
    const sweeping = await startTestLedger('postgres', { serverUrl, sweepIntervalMs: 100 });
    try {
      const organisationId = await fundedOrganisation(sweeping, 1_000n);
      const forgotten = uniqueId('forgotten');
      await sweeping.reserve({ reservationId: forgotten, organisationId, amountMicros: 400n, ttlMs: 1_000n });
      await vi.waitFor(async () => {
        expect(sumSamples(await scrape(sweeping), 'gateway_ledger_sweeper_expired_total', { kind: 'reservation' })).toBe(1);
      }, { timeout: 15_000, interval: 100 });
      const samples = await scrape(sweeping);
      expect(sumSamples(samples, 'gateway_ledger_sweeper_passes_total', { outcome: 'ok' })).toBeGreaterThan(1);
      expect(sumSamples(samples, 'gateway_ledger_sweeper_passes_total', { outcome: 'error' })).toBe(0);
      expect((await sweeping.getBalance(organisationId)).availableMicros).toBe(1_000n);
    } finally {
      await sweeping.close();
    }
  });

  it('reports the expiry of the certificates it loaded: its own as gRPC server (the ledger calls no one) and the CA\'s', async () => {
    const notAfterSeconds = (pem: string) => new X509Certificate(pem).validToDate.getTime() / 1000;
    const series = (await scrape(ledger)).filter((sample) => sample.name === 'gateway_tls_certificate_expiry_timestamp_seconds');
    expect(series.map((sample) => [sample.labels.certificate, sample.value]))
      .toEqual([['serving', notAfterSeconds(ledger.pki.identities.ledger.certPem)], ['ca', notAfterSeconds(ledger.pki.caPem)]]);
  });
});

describe.skipIf(!serverUrl)('periodic verify', () => {
  const ledger = useTestLedger('postgres', { serverUrl, verifyIntervalMs: 1_000 });

  it('reports 0 differences per check while the ledger agrees, and the corruption of a balance after the next run', async () => {
    const organisationId = await fundedOrganisation(ledger, 5_000n);
    // A run that started after the account was funded, and found it clean.
    const fundedAt = Date.now() / 1000;
    await vi.waitFor(async () => {
      expect(sumSamples(await scrape(ledger), 'gateway_ledger_verify_last_success_timestamp_seconds')).toBeGreaterThan(fundedAt);
    }, { timeout: 15_000, interval: 100 });
    let samples = await scrape(ledger);
    expect(sumSamples(samples, 'gateway_ledger_verify_differences')).toBe(0);
    const checks = samples.filter((sample) => sample.name === 'gateway_ledger_verify_differences').map((sample) => sample.labels.check);
    expect(checks).toEqual(expect.arrayContaining(['conservation', 'movements', 'credits', 'holds', 'usage', 'orphans', 'grants']));
    expect(sumSamples(samples, 'gateway_ledger_verify_duration_seconds')).toBeGreaterThan(0);

    // One micro-rupee credited from nowhere: the row still conserves, but no credit or movement says so.
    const corrupt = (delta: number) => ledger.database.query(
      'UPDATE accounts SET credited_micros = credited_micros + $2, available_micros = available_micros + $2 WHERE organisation_id = $1',
      [organisationId, delta],
    );
    await corrupt(1);
    await vi.waitFor(async () => {
      expect(sumSamples(await scrape(ledger), 'gateway_ledger_verify_differences')).toBeGreaterThan(0);
    }, { timeout: 15_000, interval: 100 });
    samples = await scrape(ledger);
    // credited and available each differ from their movements; credited from the credits table.
    expect(sumSamples(samples, 'gateway_ledger_verify_differences', { check: 'movements' })).toBe(2);
    expect(sumSamples(samples, 'gateway_ledger_verify_differences', { check: 'credits' })).toBe(1);
    expect(sumSamples(samples, 'gateway_ledger_verify_differences', { check: 'conservation' })).toBe(0);
    // The id is in the log (error level), never in a label.
    expect((await (await fetch(`http://127.0.0.1:${ledger.app.ports.metrics}/metrics`)).text())).not.toContain(organisationId);

    // Repaired, the next run reports 0 again.
    await corrupt(-1);
    await vi.waitFor(async () => {
      expect(sumSamples(await scrape(ledger), 'gateway_ledger_verify_differences')).toBe(0);
    }, { timeout: 15_000, interval: 100 });
  });
});
