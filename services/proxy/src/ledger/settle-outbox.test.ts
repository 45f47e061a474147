import { describe, expect, it } from 'vitest';
import { ledgerResultTransient, ledgerV1 } from '@gateway/contracts';
import { createLogger } from '@gateway/logger';
import { SettleOutbox, type OutboxLedger } from './settle-outbox.ts';

// The outbox ends an entry on every answer the contract's table calls final (settle-outbox.ts).
const { settle: settleResultRetryable, release: releaseResultRetryable } = ledgerResultTransient;

describe('which ledger answers end an outbox entry', () => {
  it('has a decision for every Settle and Release result, and only "no decision" is sent again', () => {
    expect(Object.keys(settleResultRetryable).map(Number).sort()).toEqual(Object.values(ledgerV1.SettleResult).map(Number).sort());
    expect(Object.keys(releaseResultRetryable).map(Number).sort()).toEqual(Object.values(ledgerV1.ReleaseResult).map(Number).sort());
    const retried = (table: Readonly<Record<number, boolean>>) => Object.entries(table).filter(([, retry]) => retry).map(([result]) => Number(result)).sort();
    expect(retried(settleResultRetryable)).toEqual([ledgerV1.SettleResult.UNRECOGNIZED, ledgerV1.SettleResult.SETTLE_RESULT_UNSPECIFIED]);
    expect(retried(releaseResultRetryable)).toEqual([ledgerV1.ReleaseResult.UNRECOGNIZED, ledgerV1.ReleaseResult.RELEASE_RESULT_UNSPECIFIED]);
    // The tombstone makes an unknown id final for Release (the late Reserve holds nothing).
    expect(releaseResultRetryable[ledgerV1.ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN]).toBe(false);
  });
});

describe('pacing new requests to the ledger (waitForRoom)', () => {
  /** A ledger whose Settles are answered only when the test says so. */
  function heldLedger() {
    const waiting: Array<() => void> = [];
    const ledger: OutboxLedger = {
      settle: () => new Promise((resolve) => {
        waiting.push(() => resolve(ledgerV1.SettleResponse.fromPartial({ result: ledgerV1.SettleResult.SETTLE_RESULT_OK })));
      }),
      release: () => Promise.resolve(ledgerV1.ReleaseResponse.fromPartial({ result: ledgerV1.ReleaseResult.RELEASE_RESULT_OK })),
    };
    return { ledger, answerOne: () => waiting.shift()?.() };
  }

  it('has room at once below a tenth of the bound; above it, a request waits until an entry is answered, or until its wait runs out', async () => {
    const { ledger, answerOne } = heldLedger();
    const outbox = new SettleOutbox({ ledger, logger: createLogger('proxy', 'silent'), maxEntries: 20, retryInitialMs: 1, retryMaxMs: 1 });
    expect(await outbox.waitForRoom(60_000)).toBe(true);
    const owner = { organisationId: 'org', requestId: 'r' };
    const settled = [outbox.settle(ledgerV1.SettleRequest.fromPartial({ reservationId: 'a' }), owner), outbox.settle(ledgerV1.SettleRequest.fromPartial({ reservationId: 'b' }), owner)];
    // Two unanswered entries: the pacing depth (20 / 10) is reached.
    let admitted = false;
    const waiting = outbox.waitForRoom(60_000).then((room) => { admitted = room; });
    await new Promise((resolve) => setImmediate(resolve));
    expect(admitted).toBe(false);
    answerOne();
    await waiting;
    expect(admitted).toBe(true);
    // The admitted request's own Settle makes two again; nothing is answered, so the next wait runs out.
    settled.push(outbox.settle(ledgerV1.SettleRequest.fromPartial({ reservationId: 'c' }), owner));
    expect(await outbox.waitForRoom(1)).toBe(false);
    answerOne();
    answerOne();
    await Promise.all(settled);
    expect(outbox.outboxDepth()).toBe(0);
  });
});
