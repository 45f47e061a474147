import { describe, expect, it } from 'vitest';
import { ledgerResultTransient, ledgerV1 } from '@gateway/contracts';

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
