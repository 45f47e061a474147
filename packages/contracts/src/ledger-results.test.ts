import { describe, expect, it } from 'vitest';
import * as ledger from './gen/gateway/ledger/v1/ledger.ts';
import { isTransientResult, ledgerResultTransient, type TransientTable } from './ledger-results.ts';
import { ledgerResultEnums } from './testing/ledger-result-enums.ts';

describe('ledgerResultTransient', () => {
  it('has a table for every result enum of the ledger contract, with an entry for every value and nothing else', () => {
    const enums = ledgerResultEnums();
    expect(enums.size).toBeGreaterThanOrEqual(8);
    expect(Object.keys(ledgerResultTransient).sort()).toEqual([...enums.keys()].sort());
    for (const [operation, members] of enums) {
      const table = ledgerResultTransient[operation as keyof typeof ledgerResultTransient] as Record<number, boolean>;
      expect(Object.keys(table).map(Number).sort(), operation).toEqual(Object.values(members).sort());
      for (const value of Object.values(table)) expect(typeof value, operation).toBe('boolean');
    }
  });

  it('never calls a success transient, and retries what decided nothing', () => {
    for (const [operation, members] of ledgerResultEnums()) {
      const table = ledgerResultTransient[operation as keyof typeof ledgerResultTransient] as Record<number, boolean>;
      for (const [name, value] of Object.entries(members)) {
        if (name.endsWith('_RESULT_OK')) expect(table[value], `${operation} ${name}`).toBe(false);
        if (name.endsWith('_RESULT_UNSPECIFIED') || name === 'UNRECOGNIZED') expect(table[value], `${operation} ${name}`).toBe(true);
      }
    }
  });

  it('says which Reserve refusals can lift and which are final', () => {
    const { ReserveResult } = ledger;
    const reserve = ledgerResultTransient.reserve;
    // The config snapshot can reach a proxy before the account is opened: a refusal that writes nothing.
    expect(reserve[ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN]).toBe(true);
    expect(reserve[ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE]).toBe(true);
    expect(reserve[ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED]).toBe(true);
    expect(reserve[ReserveResult.RESERVE_RESULT_RELEASED]).toBe(false);
    expect(reserve[ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT]).toBe(false);
    expect(reserve[ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT]).toBe(false);
  });

  it('makes every named Settle and Release answer final (the outbox stops on it)', () => {
    const { SettleResult, ReleaseResult } = ledger;
    for (const result of [SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT, SettleResult.SETTLE_RESULT_INVALID_ARGUMENT,
      SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN, SettleResult.SETTLE_RESULT_ALREADY_RESOLVED]) {
      expect(ledgerResultTransient.settle[result]).toBe(false);
    }
    for (const result of [ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT, ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN,
      ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED]) {
      expect(ledgerResultTransient.release[result]).toBe(false);
    }
  });

  it('reads a result newer than the build (passed through raw) as UNRECOGNIZED', () => {
    const { SettleResult, ReleaseResult } = ledger;
    expect(isTransientResult(ledgerResultTransient.settle, 99 as ledger.SettleResult)).toBe(true);
    expect(isTransientResult(ledgerResultTransient.settle, SettleResult.SETTLE_RESULT_ALREADY_RESOLVED)).toBe(false);
    expect(isTransientResult(ledgerResultTransient.release, ReleaseResult.RELEASE_RESULT_UNSPECIFIED)).toBe(true);
  });

  it('does not compile a table that misses a result (checked by tsc -b)', () => {
    // @ts-expect-error RELEASED and UNRECOGNIZED have no entry
    const partial: TransientTable<ledger.ReserveResult> = {
      [ledger.ReserveResult.RESERVE_RESULT_UNSPECIFIED]: true,
      [ledger.ReserveResult.RESERVE_RESULT_OK]: false,
      [ledger.ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT]: false,
      [ledger.ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT]: false,
      [ledger.ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN]: true,
      [ledger.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE]: true,
      [ledger.ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED]: true,
    };
    expect(Object.keys(partial)).toHaveLength(7);
  });
});
