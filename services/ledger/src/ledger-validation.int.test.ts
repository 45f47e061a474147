import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { maxAmountMicros } from './domain/ledger-types.ts';
import { fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { ReserveResult, SettleResult, ReleaseResult, CreditResult, OpenAccountResult } = ledgerV1;
const serverUrl = testPostgresUrl();
const tooLongId = 'x'.repeat(129);
const unknownEnum = 99 as ledgerV1.BillingMode & ledgerV1.UsageSource;

/** Bad input always gets INVALID_ARGUMENT with a detail naming the field, and writes nothing. */
describe.skipIf(!serverUrl)('input validation', () => {
  const ledger = useTestLedger('postgres', { serverUrl, conservation: 'after-each' });
  let organisationId: string;
  let heldReservationId: string;

  beforeAll(async () => {
    organisationId = await fundedOrganisation(ledger, 10_000_000n);
    heldReservationId = uniqueId('held');
    await ledger.reserve({ reservationId: heldReservationId, organisationId, amountMicros: 1_000_000n });
  });

  it('refuses bad Reserves', async () => {
    const cases: Array<[Partial<ledgerV1.ReserveRequest>, string]> = [
      [{ reservationId: '' }, 'reservation_id must not be empty'],
      [{ reservationId: tooLongId }, 'reservation_id must be at most 128'],
      [{ reservationId: 'has space' }, 'reservation_id must be printable ASCII'],
      [{ organisationId: '' }, 'organisation_id must not be empty'],
      [{ projectId: '' }, 'project_id must not be empty'],
      [{ amountMicros: 0n }, 'amount_micros must be positive'],
      [{ amountMicros: -5n }, 'amount_micros must be positive'],
      [{ amountMicros: maxAmountMicros + 1n }, 'amount_micros must be at most'],
      [{ ttlMs: 999n }, 'ttl_ms must be between 1000 and 86400000'],
      [{ ttlMs: 86_400_001n }, 'ttl_ms must be between'],
      [{ ttlMs: 0n }, 'ttl_ms must be between'],
      [{ billingMode: ledgerV1.BillingMode.BILLING_MODE_UNSPECIFIED }, 'billing_mode must be'],
      [{ billingMode: unknownEnum }, 'billing_mode must be'],
      [{ modelSlug: '' }, 'model_slug must not be empty'],
    ];
    const before = await ledger.countRows();
    for (const [change, detail] of cases) {
      const response = await ledger.reserve({ organisationId, amountMicros: 1_000n, ...change });
      expect(response.result, detail).toBe(ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT);
      expect(response.detail).toContain(detail);
    }
    // Every problem of a request is reported at once.
    const several = await ledger.reserve({ organisationId: '', amountMicros: 0n, ttlMs: 1n });
    expect(several.detail.split('; ')).toHaveLength(3);
    expect(await ledger.countRows()).toEqual(before);
  });

  it('refuses bad Settles and leaves the Reserve held', async () => {
    const cases: Array<[Partial<ledgerV1.SettleRequest>, string]> = [
      [{ reservationId: '' }, 'reservation_id must not be empty'],
      [{ reservationId: tooLongId }, 'reservation_id must be at most 128'],
      [{ inputTokens: -1n }, 'input_tokens must not be negative'],
      [{ outputTokens: -1n }, 'output_tokens must not be negative'],
      [{ costMicros: -1n }, 'cost_micros must not be negative'],
      [{ costMicros: maxAmountMicros + 1n }, 'cost_micros must be at most'],
      [{ providerCostMicros: -1n }, 'provider_cost_micros must not be negative'],
      [{ modelSlug: '' }, 'model_slug must not be empty'],
      [{ usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UNSPECIFIED }, 'usage_source must be'],
      [{ usageSource: unknownEnum }, 'usage_source must be'],
      [{ requestId: 'two words' }, 'request_id must be printable ASCII'],
    ];
    const before = await ledger.countRows();
    for (const [change, detail] of cases) {
      const response = await ledger.settle({ reservationId: heldReservationId, costMicros: 10n, ...change });
      expect(response.result, detail).toBe(SettleResult.SETTLE_RESULT_INVALID_ARGUMENT);
      expect(response.detail).toContain(detail);
    }
    // INVALID_ARGUMENT comes before RESERVATION_UNKNOWN.
    expect((await ledger.settle({ reservationId: uniqueId('ghost'), costMicros: -1n })).result).toBe(SettleResult.SETTLE_RESULT_INVALID_ARGUMENT);
    expect(await ledger.countRows()).toEqual(before);
  });

  it('refuses bad Releases, Credits and OpenAccounts', async () => {
    const before = await ledger.countRows();
    const releases: Array<[Partial<ledgerV1.ReleaseRequest>, string]> = [
      [{ reservationId: '' }, 'reservation_id must not be empty'],
      [{ reservationId: heldReservationId, reason: 'line\nbreak' }, 'reason must not contain control characters'],
      [{ reservationId: heldReservationId, reason: 'r'.repeat(501) }, 'reason must be at most 500'],
    ];
    for (const [request, detail] of releases) {
      const response = await ledger.release(request);
      expect(response.result, detail).toBe(ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT);
      expect(response.detail).toContain(detail);
    }
    const credits: Array<[Partial<ledgerV1.CreditRequest>, string]> = [
      [{ creditId: '' }, 'credit_id must not be empty'],
      [{ creditId: tooLongId }, 'credit_id must be at most 128'],
      [{ organisationId: '' }, 'organisation_id must not be empty'],
      [{ amountMicros: 0n }, 'amount_micros must be positive'],
      [{ amountMicros: -1_000_000n }, 'amount_micros must be positive'],
      [{ amountMicros: maxAmountMicros + 1n }, 'amount_micros must be at most'],
      [{ reason: 'nul\u0000byte' }, 'reason must not contain control characters'],
    ];
    for (const [change, detail] of credits) {
      const response = await ledger.credit({ organisationId, amountMicros: 1n, ...change });
      expect(response.result, detail).toBe(CreditResult.CREDIT_RESULT_INVALID_ARGUMENT);
      expect(response.detail).toContain(detail);
    }
    for (const [id, detail] of [['', 'must not be empty'], [tooLongId, 'at most 128'], ['tab\there', 'printable ASCII']] as const) {
      const response = await ledger.openAccount(id);
      expect(response.result).toBe(OpenAccountResult.OPEN_ACCOUNT_RESULT_INVALID_ARGUMENT);
      expect(response.detail).toContain(detail);
    }
    expect(await ledger.countRows()).toEqual(before);
  });

  it('answers malformed reads with the gRPC status INVALID_ARGUMENT and a message we wrote', async () => {
    const refusals: Array<[() => Promise<unknown>, string]> = [
      [() => ledger.getBalance(''), 'organisation_id must not be empty'],
      [() => ledger.listUsage({ organisationId: '' }), 'organisation_id must not be empty'],
      [() => ledger.listUsage({ organisationId, pageSize: 501 }), 'page_size must be between 1 and 500'],
      [() => ledger.listUsage({ organisationId, pageSize: -1 }), 'page_size must be between 1 and 500'],
      [() => ledger.listUsage({ organisationId, pageToken: 'bm90LWEtdG9rZW4' }), 'page_token is not a token this service issued'],
      [() => ledger.listUsage({ organisationId, fromMs: 2_000n, toMs: 1_000n }), 'from_ms must be before to_ms'],
      [() => ledger.listUsage({ organisationId, fromMs: -1n }), 'from_ms must not be negative'],
    ];
    for (const [call, message] of refusals) {
      const error = await call().then(() => undefined, (caught: unknown) => caught as ServiceError);
      expect(error?.code, message).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(error?.details).toContain(message);
      expect(error?.metadata.get('x-gateway-error-code')).toEqual(['invalid_request']);
    }
  });
});
