import { describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { GrpcLedger, type LedgerCalls, type LedgerOutbox } from './grpc-ledger.ts';

const { ReserveResult, SettleResult, ReleaseResult, CheckpointResult } = ledgerV1;

/** Calls that answer from fixed responses and keep the requests they got. */
function fixedCalls(reserveResult: number): { calls: LedgerCalls; reserves: ledgerV1.ReserveRequest[]; checkpoints: ledgerV1.CheckpointRequest[] } {
  const reserves: ledgerV1.ReserveRequest[] = [];
  const checkpoints: ledgerV1.CheckpointRequest[] = [];
  return {
    reserves, checkpoints,
    calls: {
      async reserve(request) {
        reserves.push(request);
        return { result: reserveResult as ledgerV1.ReserveResult, availableMicros: 0n, expiresAtMs: 0n, detail: 'because' };
      },
      async checkpoint(request) {
        checkpoints.push(request);
        return { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED, expiresAtMs: 0n, detail: '' };
      },
      async acquireGrant() { throw new Error('not in this test'); },
      async adjustGrant() { throw new Error('not in this test'); },
      onRecall() {},
    },
  };
}

const settles: ledgerV1.SettleRequest[] = [];
const outbox: LedgerOutbox = {
  async settle(request) {
    settles.push(request);
    return { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: request.costMicros, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 0n, detail: '' };
  },
  async release() { return { result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN, releasedMicros: 0n, availableMicros: 0n, detail: 'tombstone' }; },
  outboxFull: () => true,
  waitForRoom: () => Promise.resolve(true),
  waitForOrganisation: async () => true,
};

const order = {
  reservationId: 'res_1', organisationId: 'org', projectId: 'org-project', billingMode: 'commercial' as const, amountMicros: 9_007_199_254_740_993n, ttlMs: 600_000, modelSlug: 'chat',
};

describe('GrpcLedger: the Ledger port over the proto contract', () => {
  it('sends a Reserve in proto terms and answers in domain terms, transient from the contract\'s table', async () => {
    const { calls, reserves } = fixedCalls(ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN);
    expect(await new GrpcLedger(calls, outbox).reserve(order)).toEqual({ outcome: 'organisation_unknown', transient: true, detail: 'because', grantsRecalled: 0, liftable: true });
    expect(reserves).toEqual([{
      reservationId: 'res_1', organisationId: 'org', projectId: 'org-project', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
      amountMicros: 9_007_199_254_740_993n, ttlMs: 600_000n, modelSlug: 'chat',
    }]);
    const expected: Array<[number, string, boolean]> = [
      [ReserveResult.RESERVE_RESULT_OK, 'ok', false],
      [ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, 'insufficient_balance', true],
      [ReserveResult.RESERVE_RESULT_RELEASED, 'released', false],
      [ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT, 'idempotency_conflict', false],
      [ReserveResult.RESERVE_RESULT_UNSPECIFIED, 'unrecognized', true],
      [42, 'unrecognized', true], // a newer ledger's result, passed through raw
    ];
    for (const [result, outcome, transient] of expected) {
      expect(await new GrpcLedger(fixedCalls(result).calls, outbox).reserve(order), String(result)).toMatchObject({ outcome, transient });
    }
  });

  it('settles through the outbox with token counts and money as int64, and maps checkpoint and release answers', async () => {
    const ledger = new GrpcLedger(fixedCalls(ReserveResult.RESERVE_RESULT_OK).calls, outbox);
    const settled = await ledger.settle({
      reservationId: 'res_1', usage: { promptTokens: 3, completionTokens: 4 }, costMicros: 11n, providerCostMicros: 5n, modelSlug: 'chat',
      usageSource: 'gateway_estimate', requestId: 'req', overrunOutputTokens: 2, deployment: 'backup',
      failedAttempts: [{ attempt: 1, deployment: 'primary', outcome: 'timeout', inputTokens: 3, outputTokens: 0, providerCostMicros: 2n }],
    }, { organisationId: 'org', requestId: 'req' });
    expect(settled).toEqual({ outcome: 'ok', debitedMicros: 11n, detail: '' });
    expect(settles.at(-1)).toEqual({
      reservationId: 'res_1', inputTokens: 3n, outputTokens: 4n, costMicros: 11n, providerCostMicros: 5n, modelSlug: 'chat',
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE, requestId: 'req', overrunOutputTokens: 2n, tokenClasses: [],
      deployment: 'backup',
      failedAttempts: [{ attempt: 1, deployment: 'primary', outcome: 'timeout', inputTokens: 3n, outputTokens: 0n, providerCostMicros: 2n }],
    });
    // A usage by token class travels as TokenClassUsage messages, figures as int64.
    await ledger.settle({
      reservationId: 'res_2', usage: { promptTokens: 3, completionTokens: 4, cachedInputTokens: 2 }, costMicros: 11n, providerCostMicros: 5n, modelSlug: 'chat',
      usageSource: 'upstream', requestId: 'req', overrunOutputTokens: 0, deployment: 'primary',
      tokenClasses: [
        { tokenClass: 'input', tokens: 1, costMicros: 3n, providerCostMicros: 1n }, { tokenClass: 'cached_input', tokens: 2, costMicros: 1n, providerCostMicros: 1n },
        { tokenClass: 'output', tokens: 4, costMicros: 7n, providerCostMicros: 3n },
      ],
    }, { organisationId: 'org', requestId: 'req' });
    expect(settles.at(-1)!.tokenClasses).toEqual([
      { tokenClass: 'input', tokens: 1n, costMicros: 3n, providerCostMicros: 1n }, { tokenClass: 'cached_input', tokens: 2n, costMicros: 1n, providerCostMicros: 1n },
      { tokenClass: 'output', tokens: 4n, costMicros: 7n, providerCostMicros: 3n },
    ]);
    expect(await ledger.release({ reservationId: 'res_1', reason: 'x' }, { organisationId: 'org', requestId: 'req' }))
      .toEqual({ outcome: 'reservation_unknown', detail: 'tombstone' });
    expect(await ledger.checkpoint({
      reservationId: 'res_1', sequence: 2n, usage: { promptTokens: 3, completionTokens: 4 }, costMicros: 11n, providerCostMicros: 5n, extendTtlMs: 1000, requestId: 'req', deployment: 'primary',
    })).toEqual({ outcome: 'already_resolved', detail: '' });
    expect(ledger.settlesBacklogged()).toBe(true);
    expect(await ledger.waitForSettlesOf('org', 10)).toBe(true);
  });
});
