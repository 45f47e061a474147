import { createHmac } from 'node:crypto';
import { expect, vi } from 'vitest';
import { startLocalPayments, type LocalPayments, type LocalPaymentsLogger, type WebhookRetryPolicy } from '@gateway/local-payments';
import type { Logger } from '@gateway/logger';
import { createTestDatabase, type TestDatabase } from '@gateway/testkit';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from './admin-harness.ts';
import { startFakeLedger } from './fake-ledger.ts';

/** The provider keys the admin and the local provider share in tests (made up; rzp_test_ shaped). */
export const testPaymentKeys = {
  keyId: 'rzp_test_TopUpTests01',
  keySecret: 'topup-test-key-secret-0123456789',
  webhookSecret: 'topup-test-webhook-secret-0123456789',
};

/** A GSTIN registered in Karnataka (29) with a correct check character. */
export const karnatakaGstin = '29AAGCB7383J1Z4';

/** An admin on real PostgreSQL with the local payment provider, its webhooks pointed at the admin. */
export interface TopUpsHarness {
  /** The running admin (a new object after startAdmin). */
  admin: AdminHarness;
  payments: LocalPayments;
  /** The admin's PostgreSQL database (for reading what the API does not show, such as transition details). */
  databaseUrl: string;
  /** Stops the admin (a restart's first half); the database, the fake ledger and the provider stay. */
  stopAdmin(): Promise<void>;
  /**
   * Starts the admin again on the same database, fake ledger, token and HTTP port (so the
   * provider's webhook URL still reaches it), with `env` over the first start's environment.
   */
  startAdmin(env?: Record<string, string>): Promise<AdminHarness>;
  close(): Promise<void>;
}

/** What else a top-ups test may set: the provider's webhook retries, and loggers to read. */
export interface TopUpsHarnessOptions {
  webhookRetry?: Partial<WebhookRetryPolicy>;
  paymentsLogger?: LocalPaymentsLogger;
  adminLogger?: Logger;
}

/** Starts the local provider, then an admin paying through it (PAYMENT_PROVIDER=local), on a fresh database. */
export async function startTopUpsHarness(serverUrl: string, env: Record<string, string> = {}, options: TopUpsHarnessOptions = {}): Promise<TopUpsHarness> {
  const database: TestDatabase = await createTestDatabase(serverUrl);
  const payments = await startLocalPayments({
    ...testPaymentKeys,
    // Quick retries: a webhook the admin refused (503 while the ledger is down) comes back soon.
    webhookRetry: { attempts: 6, baseDelayMs: 50, timeoutMs: 5_000, ...options.webhookRetry },
    ...(options.paymentsLogger === undefined ? {} : { logger: options.paymentsLogger }),
  });
  // The harness owns the fake ledger, so its credits outlive an admin restart.
  const ledger = await startFakeLedger();
  const adminEnv = {
    PAYMENT_PROVIDER: 'local',
    PAYMENT_DEVELOPMENT_MODE: 'true',
    LOCAL_PAYMENTS_URL: payments.url,
    RAZORPAY_KEY_ID: testPaymentKeys.keyId,
    RAZORPAY_KEY_SECRET: testPaymentKeys.keySecret,
    RAZORPAY_WEBHOOK_SECRET: testPaymentKeys.webhookSecret,
    // A Karnataka supplier (29): top-ups are paid, so their GST documents need a supplier GSTIN.
    INVOICE_SUPPLIER_GSTIN: '29AAACG1234F1Z0',
    ...env,
  };
  const first = await startAdminHarness({
    databaseUrl: database.url, ledger, env: adminEnv, ...(options.adminLogger === undefined ? {} : { logger: options.adminLogger }),
  });
  payments.setWebhookUrl(`${first.baseUrl}/webhooks/razorpay`);
  let running: AdminHarness | undefined = first;
  const harness: TopUpsHarness = {
    admin: first,
    payments,
    databaseUrl: database.url,
    async stopAdmin() {
      await running?.close();
      running = undefined;
    },
    async startAdmin(restartEnv = {}) {
      if (running !== undefined) throw new Error('the admin is running: stopAdmin first');
      running = await startAdminHarness({
        databaseUrl: database.url, ledger, token: first.token, encryptionKey: first.encryptionKey,
        env: { ...adminEnv, ...restartEnv, ADMIN_HTTP_PORT: new URL(first.baseUrl).port },
        ...(options.adminLogger === undefined ? {} : { logger: options.adminLogger }),
      });
      harness.admin = running;
      return running;
    },
    async close() {
      await payments.close();
      await running?.close();
      await ledger.close();
      await database.drop();
    },
  };
  return harness;
}

/** Asserts the status of an answer, showing its body when it differs. */
export function expectStatus(response: HarnessResponse, status: number): HarnessResponse {
  expect(response.status, response.text).toBe(status);
  return response;
}

/** A new organisation with a billing profile (Karnataka, registered) and a new active package; their ids. */
export async function organisationReadyToBuy(admin: AdminHarness, label: string): Promise<{ organisationId: string; packageId: string; creditMicros: string }> {
  const organisationId = expectStatus(await admin.request('POST', '/admin/v1/organisations', { name: `${label} ${Math.random().toString(36).slice(2, 8)}` }), 201).json.id as string;
  expectStatus(await admin.request('PUT', `/admin/v1/organisations/${organisationId}/billing-profile`, {
    legal_name: `${label} Private Limited`, address: '1 MG Road, Bengaluru 560001', state_code: '29', gstin: karnatakaGstin,
  }), 200);
  const creditMicros = '500000000';
  const packageId = expectStatus(await admin.request('POST', '/admin/v1/topup-packages', {
    name: `${label} ₹590`, price_paise: '59000', credit_micros: creditMicros,
  }), 201).json.id as string;
  return { organisationId, packageId, creditMicros };
}

/** Buys a package; the answer's top-up and checkout block. */
export async function purchase(admin: AdminHarness, organisationId: string, packageId: string) {
  const response = expectStatus(await admin.request('POST', `/admin/v1/organisations/${organisationId}/topups`, { package_id: packageId }), 201);
  return { topUp: response.json.topup, checkout: response.json.checkout };
}

/** The top-up as the API shows it now. */
export async function readTopUp(admin: AdminHarness, organisationId: string, topUpId: string) {
  return expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/topups/${topUpId}`), 200).json;
}

/** Waits (polling) until the top-up is in `state`; the top-up then. */
export async function waitForState(admin: AdminHarness, organisationId: string, topUpId: string, state: string) {
  return vi.waitFor(async () => {
    const topUp = await readTopUp(admin, organisationId, topUpId);
    expect(topUp.state).toBe(state);
    return topUp;
  }, { timeout: 15_000, interval: 25 });
}

/** POSTs a webhook body as given (exact bytes) with its headers. */
export function postWebhook(admin: AdminHarness, body: string, headers: { signature?: string; eventId?: string }): Promise<HarnessResponse> {
  return admin.request('POST', '/webhooks/razorpay', body, {
    'content-type': 'application/json',
    ...(headers.signature === undefined ? {} : { 'x-razorpay-signature': headers.signature }),
    ...(headers.eventId === undefined ? {} : { 'x-razorpay-event-id': headers.eventId }),
  });
}

/** hex HMAC-SHA256 of a body with a secret: a webhook signature. */
export function webhookSignature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * The ledger credits made for top-ups of an organisation (credit id → µ₹) and its credited total:
 * exactly one `topup:<id>` each, and nothing credited twice.
 */
export function topUpCredits(admin: AdminHarness, organisationId: string): { credits: Map<string, bigint>; creditedMicros: bigint } {
  const credits = new Map<string, bigint>();
  for (const [creditId, credit] of admin.ledger.credits) {
    if (credit.organisationId === organisationId && creditId.startsWith('topup:')) credits.set(creditId, credit.amountMicros);
  }
  return { credits, creditedMicros: admin.ledger.accounts.get(organisationId)?.creditedMicros ?? 0n };
}

/** The causes of a top-up's transitions that entered `state` (from another state). */
export function entriesInto(topUp: { transitions: Array<{ from_state: string | null; to_state: string; cause: string }> }, state: string): string[] {
  return topUp.transitions.filter((transition) => transition.to_state === state && transition.from_state !== state).map((transition) => transition.cause);
}
