import { beforeAll, describe, expect, it, vi } from 'vitest';
import { status as GrpcStatus, type ClientDuplexStream } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { startTestLedger, uniqueId, type TestLedger } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();
const { BillingMode, ReserveResult, SettleResult, ReleaseResult, CheckpointResult, UsageSource } = ledgerV1;

type OperateStream = ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>;

/** Collects a stream's answers by call id, and how it ended. */
function watch(stream: OperateStream) {
  const answers = new Map<bigint, ledgerV1.OperationResponse>();
  const waiting = new Map<bigint, (answer: ledgerV1.OperationResponse) => void>();
  const ended = new Promise<{ error?: { code: number } }>((resolve) => {
    stream.on('error', (error: { code: number }) => resolve({ error }));
    stream.on('end', () => resolve({}));
  });
  stream.on('data', (response: ledgerV1.OperationResponse) => {
    answers.set(response.callId, response);
    waiting.get(response.callId)?.(response);
    waiting.delete(response.callId);
  });
  /** Resolves with the answer to callId when it arrives (vitest's test timeout bounds the wait). */
  const answerOf = (callId: bigint): Promise<ledgerV1.OperationResponse> => {
    const answer = answers.get(callId);
    if (answer !== undefined) return Promise.resolve(answer);
    return new Promise((resolve) => { waiting.set(callId, resolve); });
  };
  return { answers, ended, answerOf };
}

describe.skipIf(!serverUrl)('Operate: the hot-path methods as messages on one stream', () => {
  const ledger = useTestLedger('postgres', { serverUrl });
  let organisationId: string;
  beforeAll(async () => {
    organisationId = uniqueId('operate-org');
    await ledger.openAccount(organisationId);
    await ledger.credit({ organisationId, amountMicros: 1_000n });
  });

  it('answers Reserve, Settle, Release and Checkpoint as the unary methods do, money included, matched by call id', async () => {
    const stream: OperateStream = ledger.client.operate();
    const { answerOf } = watch(stream);
    const [settled, released] = [uniqueId('op-r'), uniqueId('op-r')];
    const reserve = (callId: bigint, reservationId: string, amountMicros: bigint) => stream.write({
      callId, requestId: `req-${callId}`,
      reserve: { reservationId, organisationId, projectId: 'p', billingMode: BillingMode.BILLING_MODE_COMMERCIAL, amountMicros, ttlMs: 60_000n, modelSlug: 'm' },
    });
    reserve(1n, settled, 400n);
    reserve(2n, released, 500n);
    reserve(3n, uniqueId('op-r'), 200n); // 400 + 500 + 200 > 1,000: refused, whichever order they ran in
    const reserves = await Promise.all([answerOf(1n), answerOf(2n), answerOf(3n)]);
    expect(reserves.map((answer) => answer.reserve?.result))
      .toEqual([ReserveResult.RESERVE_RESULT_OK, ReserveResult.RESERVE_RESULT_OK, ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE]);

    stream.write({ callId: 4n, requestId: '', checkpoint: { reservationId: settled, sequence: 1n, inputTokens: 1n, outputTokens: 1n, costMicros: 100n, providerCostMicros: 0n, extendTtlMs: 0n, requestId: '', deployment: '' } });
    // Messages are answered concurrently: the checkpoint must land before the settle of the same
    // reservation, or it is (rightly) ALREADY_RESOLVED.
    const checkpointed = await answerOf(4n);
    stream.write({
      callId: 5n, requestId: '',
      settle: { reservationId: settled, inputTokens: 10n, outputTokens: 20n, costMicros: 300n, providerCostMicros: 90n, modelSlug: 'm', usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'client-req', overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [] },
    });
    stream.write({ callId: 6n, requestId: '', release: { reservationId: released, reason: 'upstream_not_called', failedAttempts: [], modelSlug: '' } });
    const [settledAnswer, releasedAnswer] = await Promise.all([answerOf(5n), answerOf(6n)]);
    expect(checkpointed.checkpoint?.result).toBe(CheckpointResult.CHECKPOINT_RESULT_OK);
    expect(settledAnswer.settle).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 300n, releasedMicros: 100n, overrunMicros: 0n });
    expect(releasedAnswer.release?.result).toBe(ReleaseResult.RELEASE_RESULT_OK);

    // A replay on the stream is a replay: the first answer, nothing moved twice.
    stream.write({
      callId: 7n, requestId: '',
      settle: { reservationId: settled, inputTokens: 10n, outputTokens: 20n, costMicros: 300n, providerCostMicros: 90n, modelSlug: 'm', usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'client-req', overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [] },
    });
    expect((await answerOf(7n)).settle).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 300n });
    expect(await ledger.getBalance(organisationId)).toMatchObject({ creditedMicros: 1_000n, availableMicros: 700n, heldMicros: 0n, debitedMicros: 300n });
    expect((await ledger.verify()).differences).toEqual([]);
    stream.end();
  });

  it('answers a message that names no method with the error a unary call would get, and keeps the stream open', async () => {
    const stream: OperateStream = ledger.client.operate();
    const { answerOf } = watch(stream);
    stream.write({ callId: 1n, requestId: '' });
    const answer = await answerOf(1n);
    expect(answer.error).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, errorCode: 'invalid_request' });
    expect(answer.error!.message).toMatch(/names no method/);
    stream.write({ callId: 2n, requestId: '', release: { reservationId: uniqueId('op-unknown'), reason: 'upstream_not_called', failedAttempts: [], modelSlug: '' } });
    expect((await answerOf(2n)).release?.result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    stream.end();
  });

  it('ends its streams at shutdown only once what they received is answered', async () => {
    const own = await startTestLedger('postgres', { serverUrl });
    const stream: OperateStream = own.client.operate();
    const { answerOf, ended } = watch(stream);
    const organisation = uniqueId('operate-shutdown');
    await own.openAccount(organisation);
    await own.credit({ organisationId: organisation, amountMicros: 100n });
    // Hold the account row, so the Reserve below is still running when shutdown begins.
    let unlock!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => { locked = resolve; });
    const holding = own.database.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM accounts WHERE organisation_id = $1 FOR UPDATE', [organisation]);
      locked();
      await new Promise<void>((resolve) => { unlock = resolve; });
    });
    await isLocked;
    const reservationId = uniqueId('op-r');
    stream.write({
      callId: 1n, requestId: '',
      reserve: { reservationId, organisationId: organisation, projectId: 'p', billingMode: BillingMode.BILLING_MODE_COMMERCIAL, amountMicros: 10n, ttlMs: 60_000n, modelSlug: 'm' },
    });
    await waitForLockWaiter(own);
    const closing = own.close();
    // Shutdown has begun once a new message is refused as UNAVAILABLE (until then, one that
    // touches no locked row is answered as usual): only then may the Reserve finish.
    let probe = 1n;
    await vi.waitFor(async () => {
      probe += 1n;
      stream.write({ callId: probe, requestId: '', release: { reservationId: uniqueId('op-probe'), reason: 'upstream_not_called', failedAttempts: [], modelSlug: '' } });
      const answer = await answerOf(probe);
      expect(answer.error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, errorCode: 'service_unavailable' });
    }, { timeout: 10_000, interval: 20 });
    unlock();
    await holding;
    expect((await answerOf(1n)).reserve?.result).toBe(ReserveResult.RESERVE_RESULT_OK);
    expect(await ended).toEqual({}); // ended by the ledger with an OK status, after the answer
    await closing;
  });
});

/** Waits until some backend of the ledger's database waits on a row lock (the Reserve behind the test's lock). */
async function waitForLockWaiter(ledger: TestLedger): Promise<void> {
  await vi.waitFor(async () => {
    const { rows } = await ledger.database.query<{ waiting: bigint }>(
      "SELECT count(*)::bigint AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    expect(rows[0]!.waiting, 'the Reserve never waited on the account lock').toBeGreaterThan(0n);
  }, { timeout: 5_000, interval: 10 });
}
