/**
 * The scenarios of one reservation's life: a Reserve holds, a Settle debits, a Release gives back,
 * each reservation takes one outcome, replays answer the first result, and a Release that overtakes
 * its Reserve leaves a tombstone. Amounts are µ₹.
 */
import { ledgerV1 } from '@gateway/contracts';
import { inr, money, type LedgerScenario } from './ledger-scenario-types.ts';

const { ReserveResult, SettleResult, ReleaseResult, CheckpointResult } = ledgerV1;

/** Hold, settle, release, overrun, refusal, replay and tombstone scenarios, in the order they are run. */
export const reservationLifeScenarios: LedgerScenario[] = [
  {
    name: 'a Reserve holds, a Settle debits the cost and gives the rest back',
    laws: ['NO_OVERSPEND', 'CONSERVATION', 'NOTHING_FREE'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: 2_500_000n, ttlMs: 90_000n, deadlineFromTtl: true,
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7_500_000n }, money: money(7_500_000n, 2_500_000n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 1_234_567n, inputTokens: 1200n, outputTokens: 345n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 1_234_567n, releasedMicros: 1_265_433n, overrunMicros: 0n, availableMicros: 8_765_433n },
        money: money(8_765_433n, 0n, 1_234_567n) },
      { call: 'reserve', reservation: 'r2', amountMicros: inr,
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7_765_433n }, money: money(7_765_433n, inr, 1_234_567n) },
      { call: 'settle', reservation: 'r2', costMicros: 0n, why: 'a request that produced nothing is still settled, at zero',
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n, releasedMicros: inr, overrunMicros: 0n, availableMicros: 8_765_433n },
        money: money(8_765_433n, 0n, 1_234_567n) },
    ],
  },
  {
    name: 'a Release gives the whole Reserve back; the released reservation takes no other outcome',
    laws: ['ONE_OUTCOME', 'CONSERVATION', 'IDEMPOTENCY'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 9n * inr } },
      { call: 'release', reservation: 'r1',
        expect: { result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: inr, availableMicros: 10n * inr }, money: money(10n * inr, 0n, 0n) },
      { call: 'release', reservation: 'r1', why: 'a replay of the Release answers OK again and moves nothing',
        expect: { result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: inr, availableMicros: 10n * inr }, money: money(10n * inr, 0n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 100n,
        expect: { result: SettleResult.SETTLE_RESULT_ALREADY_RESOLVED }, money: money(10n * inr, 0n, 0n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 100n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED } },
    ],
  },
  {
    name: 'a settled reservation is neither released nor checkpointed',
    laws: ['ONE_OUTCOME', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'settle', reservation: 'r1', costMicros: 400_000n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 400_000n, releasedMicros: 600_000n }, money: money(9_600_000n, 0n, 400_000n) },
      { call: 'release', reservation: 'r1', expect: { result: ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED, releasedMicros: 0n }, money: money(9_600_000n, 0n, 400_000n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 500_000n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED } },
    ],
  },
  {
    name: 'a Settle past the Reserve debits the overrun, below zero only by it',
    laws: ['BOUNDED_OVERRUN', 'CONSERVATION'],
    creditMicros: inr,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 0n } },
      { call: 'settle', reservation: 'r1', costMicros: 1_000_250n, outputTokens: 10n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 1_000_250n, releasedMicros: 0n, overrunMicros: 250n, availableMicros: -250n },
        money: money(-250n, 0n, 1_000_250n) },
      { call: 'reserve', reservation: 'r2', amountMicros: 1n, expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: -250n } },
    ],
  },
  {
    name: 'a Reserve that does not fit is refused, writes nothing, and is evaluated afresh when repeated',
    laws: ['NO_OVERSPEND', 'CONSERVATION'],
    creditMicros: inr,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr + 1n,
        expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: inr }, money: money(inr, 0n, 0n) },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, why: 'an exact fit is allowed',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 0n }, money: money(0n, inr, 0n) },
      { call: 'reserve', reservation: 'r3', amountMicros: 1n, expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: 0n } },
      { call: 'release', reservation: 'r2', expect: { result: ReleaseResult.RELEASE_RESULT_OK } },
      { call: 'reserve', reservation: 'r3', amountMicros: 1n, why: 'the refused id held nothing, so it may hold now',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: inr - 1n }, money: money(inr - 1n, 1n, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: inr + 1n,
        expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: inr - 1n } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, why: 'the refused Reserve left no reservation to settle',
        expect: { result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN }, money: money(inr - 1n, 1n, 0n) },
    ],
  },
  {
    name: 'a Reserve for an organisation without an account is refused in both billing modes',
    laws: ['NO_OVERSPEND', 'INTERNAL_MODE'],
    creditMicros: null,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN } },
    ],
  },
  {
    name: 'a Reserve replayed with the same payload returns the first result; with another payload it conflicts and changes nothing',
    laws: ['IDEMPOTENCY', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 9n * inr } },
      { call: 'reserve', reservation: 'r2', amountMicros: 2n * inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7n * inr } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, sameAnswerAs: 0, why: 'the first outcome and deadline; the balance as it is now',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7n * inr }, money: money(7n * inr, 3n * inr, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: 2n * inr, expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT },
        money: money(7n * inr, 3n * inr, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, ttlMs: 61_000n, expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, project: 'other', expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'reserve', reservation: 'r1', amountMicros: 0n, why: 'a conflict precedes invalid input (the enum order)',
        expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT }, money: money(7n * inr, 3n * inr, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 250_000n, expect: { result: SettleResult.SETTLE_RESULT_OK } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, sameAnswerAs: 0, why: 'a replay after the settle still returns the first result and holds nothing again',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7_750_000n }, money: money(7_750_000n, 2n * inr, 250_000n) },
    ],
  },
  {
    name: 'a Settle replayed with the same payload returns the first result; with another payload it conflicts and changes nothing',
    laws: ['IDEMPOTENCY', 'NOTHING_FREE', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 300_000n, releasedMicros: 700_000n, availableMicros: 9_700_000n } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 8_700_000n } },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n, sameAnswerAs: 1,
        expect: { result: SettleResult.SETTLE_RESULT_OK, availableMicros: 8_700_000n }, money: money(8_700_000n, inr, 300_000n) },
      { call: 'settle', reservation: 'r1', costMicros: 300_001n, outputTokens: 30n,
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT }, money: money(8_700_000n, inr, 300_000n) },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n, requestId: 'req-2',
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n, raw: { overrunOutputTokens: 5n },
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT }, money: money(8_700_000n, inr, 300_000n) },
    ],
  },
  {
    name: 'a Release that overtakes its Reserve leaves a tombstone: the late Reserve holds nothing',
    laws: ['ONE_OUTCOME', 'NO_OVERSPEND', 'CONSERVATION'],
    steps: [
      { call: 'release', reservation: 'r1', expect: { result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN, releasedMicros: 0n } },
      { call: 'release', reservation: 'r1', why: 'final: a repeat answers the same',
        expect: { result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN, releasedMicros: 0n } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_RELEASED }, money: money(10n * inr, 0n, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: 2n * inr, billingMode: 'internal', why: 'the tombstone precedes a conflict and every refusal',
        expect: { result: ReserveResult.RESERVE_RESULT_RELEASED } },
      { call: 'reserve', reservation: 'r1', amountMicros: 0n, why: 'only invalid input precedes the tombstone',
        expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 100n, expect: { result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK }, money: money(9n * inr, inr, 0n) },
    ],
  },
  {
    name: 'a Settle or Checkpoint of an unknown reservation changes nothing and leaves no tombstone',
    laws: ['ONE_OUTCOME', 'CONSERVATION'],
    steps: [
      { call: 'settle', reservation: 'r1', costMicros: 100n, expect: { result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN }, money: money(10n * inr, 0n, 0n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN } },
      { call: 'checkpoint', reservation: 'r1', sequence: 0n, why: 'invalid input precedes an unknown reservation (the enum order)',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'release', reservation: 'r1', raw: { reason: 'bad\nreason' }, why: 'an invalid Release leaves no tombstone',
        expect: { result: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 9n * inr } },
    ],
  },
];
