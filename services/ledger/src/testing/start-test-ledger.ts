import { randomUUID } from 'node:crypto';
import { ledgerV1 } from '@gateway/contracts';
import { openDatabase, type Database } from '@gateway/db';
import { callUnary, channelCredentials } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { tracingOff, type ServiceTracing } from '@gateway/telemetry';
import {
  createTestDatabase, serviceTlsEnv, sharedTestPki, testTransportSecurity, type TestDatabase, type TestIdentity, type TestPki,
} from '@gateway/testkit';
import { createLedgerApp, type LedgerApp } from '../app.ts';
import { loadLedgerConfig } from '../config.ts';

/** Which database a test ledger runs over. */
export type TestBackend = 'postgres' | 'pglite';

/** Deadline of every test call, ms. */
const callDeadlineMs = 10_000;

/** A ledger started for a test, a real gRPC client to it, and a handle on its database for checks. */
export interface TestLedger {
  app: LedgerApp;
  /** The ledger's database (schema `ledger`), for assertions on rows. */
  database: Database;
  /** A client with the proxy's identity (Reserve, Settle, Release, Checkpoint, Operate). */
  client: ledgerV1.LedgerServiceClient;
  /** A client with the admin's identity (accounts, credits, balances, usage, budgets, Verify). */
  adminClient: ledgerV1.LedgerServiceClient;
  /** The PKI the ledger trusts, for tests that dial it with other identities. */
  pki: TestPki;
  /** A new client of this ledger with `identity`'s certificate (the caller closes it). */
  clientAs(identity: TestIdentity): ledgerV1.LedgerServiceClient;
  openAccount(organisationId: string): Promise<ledgerV1.OpenAccountResponse>;
  reserve(request: Partial<ledgerV1.ReserveRequest>): Promise<ledgerV1.ReserveResponse>;
  settle(request: Partial<ledgerV1.SettleRequest>): Promise<ledgerV1.SettleResponse>;
  release(request: Partial<ledgerV1.ReleaseRequest>): Promise<ledgerV1.ReleaseResponse>;
  credit(request: Partial<ledgerV1.CreditRequest>): Promise<ledgerV1.CreditResponse>;
  refundCredit(request: Partial<ledgerV1.RefundCreditRequest>): Promise<ledgerV1.RefundCreditResponse>;
  reverseRefund(request: Partial<ledgerV1.ReverseRefundRequest>): Promise<ledgerV1.ReverseRefundResponse>;
  getBalance(organisationId: string): Promise<ledgerV1.GetBalanceResponse>;
  listUsage(request: Partial<ledgerV1.ListUsageRequest>): Promise<ledgerV1.ListUsageResponse>;
  checkpoint(request: Partial<ledgerV1.CheckpointRequest>): Promise<ledgerV1.CheckpointResponse>;
  setProjectBudget(request: Partial<ledgerV1.SetProjectBudgetRequest>): Promise<ledgerV1.SetProjectBudgetResponse>;
  getProjectSpend(projectId: string): Promise<ledgerV1.GetProjectSpendResponse>;
  /** ListProjectSpends for one organisation (admin role). */
  listProjectSpends(organisationId: string): Promise<ledgerV1.ListProjectSpendsResponse>;
  summarizeUsage(request: Partial<ledgerV1.SummarizeUsageRequest>): Promise<ledgerV1.SummarizeUsageResponse>;
  /** SummarizeDeployments over a window (admin role). */
  summarizeDeployments(request: Partial<ledgerV1.SummarizeDeploymentsRequest>): Promise<ledgerV1.SummarizeDeploymentsResponse>;
  listBudgetAlerts(request: Partial<ledgerV1.ListBudgetAlertsRequest>): Promise<ledgerV1.ListBudgetAlertsResponse>;
  verify(): Promise<ledgerV1.VerifyResponse>;
  acquireGrant(request: Partial<ledgerV1.AcquireGrantRequest>): Promise<ledgerV1.AcquireGrantResponse>;
  adjustGrant(request: Partial<ledgerV1.AdjustGrantRequest>): Promise<ledgerV1.AdjustGrantResponse>;
  /** Rows in each ledger table: "nothing written" is these counts not moving. */
  countRows(): Promise<Record<string, bigint>>;
  close(): Promise<void>;
}

/** Options of a test ledger. */
export interface TestLedgerOptions {
  /** PostgreSQL server URL (required for the postgres backend). */
  serverUrl?: string;
  /** Sweeper interval, ms; short so expiry tests finish quickly. */
  sweepIntervalMs?: number;
  /** Periodic verify interval, ms (LEDGER_VERIFY_INTERVAL_MS); default the service's. */
  verifyIntervalMs?: number;
  /**
   * An existing PostgreSQL database to run over instead of a fresh one (a second replica of a
   * ledger already started on it); it is not dropped on close.
   */
  databaseUrl?: string;
  /** The ledger's tracing (the tracing test's, exporting to its receiver); default off. */
  tracing?: ServiceTracing;
}

/** A fresh id with a readable prefix, so concurrent tests never share rows. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

/**
 * Starts a ledger on ports 0 over a fresh database: a new PostgreSQL database that the app
 * opens from DATABASE_URL itself, or an in-memory PGlite handed to it as a dependency.
 */
export async function startTestLedger(backend: TestBackend, options: TestLedgerOptions = {}): Promise<TestLedger> {
  let testDatabase: TestDatabase | undefined;
  let database: Database;
  const pki = await sharedTestPki();
  const env: Record<string, string> = {
    ...serviceTlsEnv(pki, 'ledger'),
    LEDGER_GRPC_PORT: '0', LEDGER_HTTP_PORT: '0', LEDGER_METRICS_PORT: '0', LOG_LEVEL: 'silent',
    LEDGER_SWEEP_INTERVAL_MS: String(options.sweepIntervalMs ?? 100), SHUTDOWN_GRACE_MS: '2000',
    ...(options.verifyIntervalMs === undefined ? {} : { LEDGER_VERIFY_INTERVAL_MS: String(options.verifyIntervalMs) }),
  };
  let app: LedgerApp;
  const logger = createLogger('ledger', 'silent');
  if (backend === 'postgres') {
    if (!options.serverUrl && !options.databaseUrl) throw new Error('the postgres backend needs a server URL');
    if (!options.databaseUrl) testDatabase = await createTestDatabase(options.serverUrl!);
    const url = options.databaseUrl ?? testDatabase!.url;
    app = await createLedgerApp(loadLedgerConfig({ ...env, DATABASE_URL: url, LEDGER_DB_POOL_SIZE: '20' }), { logger, tracing: options.tracing ?? tracingOff });
    database = await openDatabase({ url, schema: 'ledger', poolSize: 4 });
  } else {
    database = await openDatabase({ schema: 'ledger' });
    app = await createLedgerApp(loadLedgerConfig(env), { logger, database, tracing: options.tracing ?? tracingOff });
  }
  const clientAs = (identity: TestIdentity) =>
    new ledgerV1.LedgerServiceClient(`127.0.0.1:${app.ports.grpc}`, channelCredentials(testTransportSecurity(pki, identity)));
  const client = clientAs('proxy');
  const adminClient = clientAs('admin');
  const admin = adminClient;

  return {
    app, database, client, adminClient, pki, clientAs,
    openAccount: (organisationId) =>
      callUnary(admin.openAccount, admin, ledgerV1.OpenAccountRequest.fromPartial({ organisationId }), callDeadlineMs),
    reserve: (request) => callUnary(client.reserve, client, {
      reservationId: uniqueId('res'), organisationId: '', projectId: 'project-1',
      billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL, amountMicros: 0n, ttlMs: 60_000n, modelSlug: 'model-a',
      ...request,
    }, callDeadlineMs),
    settle: (request) => callUnary(client.settle, client, {
      reservationId: '', inputTokens: 0n, outputTokens: 0n, costMicros: 0n, providerCostMicros: 0n, modelSlug: 'model-a',
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'req-1', overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [],
      ...request,
    }, callDeadlineMs),
    release: (request) => callUnary(client.release, client, { reservationId: '', reason: 'upstream_not_called', failedAttempts: [], modelSlug: '', ...request }, callDeadlineMs),
    credit: (request) => callUnary(admin.credit, admin, {
      creditId: uniqueId('credit'), organisationId: '', amountMicros: 0n, reason: 'test top-up', purchased: false, ...request,
    }, callDeadlineMs),
    refundCredit: (request) => callUnary(admin.refundCredit, admin, {
      refundId: uniqueId('refund'), organisationId: '', creditId: '', amountMicros: 0n, reason: 'test refund', upToAvailable: false, ...request,
    }, callDeadlineMs),
    reverseRefund: (request) => callUnary(admin.reverseRefund, admin, {
      reversalId: uniqueId('reversal'), organisationId: '', refundId: '', reason: 'test reversal', ...request,
    }, callDeadlineMs),
    getBalance: (organisationId) =>
      callUnary(admin.getBalance, admin, ledgerV1.GetBalanceRequest.fromPartial({ organisationId }), callDeadlineMs),
    listUsage: (request) => callUnary(admin.listUsage, admin, {
      organisationId: '', projectId: '', modelSlug: '', fromMs: 0n, toMs: 0n, pageSize: 0, pageToken: '', ...request,
    }, callDeadlineMs),
    checkpoint: (request) => callUnary(client.checkpoint, client, {
      reservationId: '', sequence: 1n, inputTokens: 0n, outputTokens: 0n, costMicros: 0n, providerCostMicros: 0n, extendTtlMs: 0n,
      requestId: '', deployment: '', ...request,
    }, callDeadlineMs),
    setProjectBudget: (request) => callUnary(admin.setProjectBudget, admin, {
      requestId: uniqueId('budget'), organisationId: '', projectId: '', monthlyCapMicros: 0n, softAlertPercent: 80, ...request,
    }, callDeadlineMs),
    getProjectSpend: (projectId) =>
      callUnary(admin.getProjectSpend, admin, ledgerV1.GetProjectSpendRequest.fromPartial({ projectId }), callDeadlineMs),
    listProjectSpends: (organisationId) =>
      callUnary(admin.listProjectSpends, admin, ledgerV1.ListProjectSpendsRequest.fromPartial({ organisationId }), callDeadlineMs),
    summarizeUsage: (request) => callUnary(admin.summarizeUsage, admin, {
      organisationId: '', projectId: '', fromMs: 0n, toMs: 0n, groupByProject: false, allOrganisations: false, ...request,
    }, callDeadlineMs),
    summarizeDeployments: (request) => callUnary(admin.summarizeDeployments, admin, { fromMs: 0n, toMs: 0n, ...request }, callDeadlineMs),
    listBudgetAlerts: (request) => callUnary(admin.listBudgetAlerts, admin, {
      afterId: '', organisationId: '', limit: 0, ...request,
    }, callDeadlineMs),
    verify: () => callUnary(admin.verify, admin, {}, callDeadlineMs),
    acquireGrant: (request) => callUnary(client.acquireGrant, client, {
      grantId: uniqueId('grant'), organisationId: '', projectId: 'project-1', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
      minMicros: 1n, wantMicros: 1n, ttlMs: 60_000n, ownerId: 'proxy-a', ...request,
    }, callDeadlineMs),
    adjustGrant: (request) => callUnary(client.adjustGrant, client, {
      adjustmentId: uniqueId('adj'), grantId: '', returnMicros: 0n, close: false, extendTtlMs: 0n, reason: 'test', ...request,
    }, callDeadlineMs),
    async countRows() {
      const counts: Record<string, bigint> = {};
      for (const table of ['accounts', 'credits', 'refunds', 'refund_reversals', 'reservations', 'movements', 'usage_records', 'project_budgets',
        'project_budget_changes', 'project_month_spend', 'budget_alerts', 'grants', 'grant_adjustments']) {
        const { rows } = await database.query<{ count: bigint }>(`SELECT count(*) AS count FROM ${table}`);
        counts[table] = rows[0]!.count;
      }
      // Balances too (weighted, so money moving between columns shows): a refusal must not move money.
      // numeric, since a test may fill an account up to the int64 limit.
      const { rows } = await database.query<{ total: string }>(
        `SELECT coalesce(sum(credited_micros::numeric + available_micros::numeric * 3 + held_micros::numeric * 5
           + debited_micros::numeric * 7), 0)::text AS total FROM accounts`,
      );
      counts.balanceTotal = BigInt(rows[0]!.total);
      const statuses = await database.query<{ status: string; count: bigint }>('SELECT status, count(*) AS count FROM reservations GROUP BY status');
      for (const row of statuses.rows) counts[`status:${row.status}`] = row.count;
      // Checkpoints and spend change columns, not row counts: a refusal must not move them either.
      const columns = await database.query<{ total: string }>(
        `SELECT (coalesce((SELECT sum(checkpoint_sequence::numeric + checkpoint_cost_micros::numeric * 3
             + floor(extract(epoch FROM expires_at) * 1000000)::numeric) FROM reservations), 0)
           + coalesce((SELECT sum(settled_micros::numeric) FROM project_month_spend), 0)
           + coalesce((SELECT sum(monthly_cap_micros::numeric + soft_alert_percent) FROM project_budgets), 0)
           + coalesce((SELECT sum(remaining_micros::numeric * 11 + floor(extract(epoch FROM expires_at) * 1000000)::numeric
               + (recalled_at IS NOT NULL)::int) FROM grants), 0))::text AS total`,
      );
      counts.columnTotal = BigInt(columns.rows[0]!.total.split('.')[0]!);
      return counts;
    },
    async close() {
      client.close();
      adminClient.close();
      await app.close();
      await database.close();
      await testDatabase?.drop();
    },
  };
}

/** Opens an account and credits it, returning the organisation id. */
export async function fundedOrganisation(ledger: TestLedger, amountMicros: bigint): Promise<string> {
  const organisationId = uniqueId('org');
  await ledger.openAccount(organisationId);
  if (amountMicros > 0n) await ledger.credit({ organisationId, amountMicros });
  return organisationId;
}

/** The balances of an organisation as a plain object, for one-line assertions. */
export async function balancesOf(ledger: TestLedger, organisationId: string) {
  const { creditedMicros, availableMicros, heldMicros, debitedMicros } = await ledger.getBalance(organisationId);
  return { creditedMicros, availableMicros, heldMicros, debitedMicros };
}

/** Waits (polling) until a reservation has left `held`; fails after timeoutMs. Not a timing assertion: it only bounds the wait. */
export async function waitForStatus(database: Database, reservationId: string, status: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await database.query<{ status: string }>('SELECT status FROM reservations WHERE id = $1', [reservationId]);
    if (rows[0]?.status === status) return;
    if (Date.now() > deadline) throw new Error(`reservation ${reservationId} did not become ${status} (is ${rows[0]?.status})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
