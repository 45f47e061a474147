import { ledgerResultNames, ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { verifyLedger } from '../domain/find-balance-differences.ts';
import { getBalance } from '../domain/get-balance.ts';
import { getProjectSpend } from '../domain/get-project-spend.ts';
import { listBudgetAlerts } from '../domain/list-budget-alerts.ts';
import { listUsage } from '../domain/list-usage.ts';
import { summarizeUsage } from '../domain/summarize-usage.ts';
import type { Handled } from './ledger-call.ts';
import { balanceDifferenceToProto, billingModesToProto, budgetAlertToProto, usageRecordToProto } from './ledger-proto-tables.ts';

/** Wraps one method's work as a logged, request-id-tagged gRPC unary handler (createLedgerGrpcService's `handle`). */
export type HandleUnary = <Req, Res>(
  method: string, work: (request: Req) => Promise<Handled<Res>>,
) => (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;

/** The LedgerService methods that only read (balances, usage, spend, alerts, Verify). */
type ReadMethods = 'getBalance' | 'listUsage' | 'getProjectSpend' | 'summarizeUsage' | 'listBudgetAlerts' | 'verify';

/**
 * The unary handlers that read and never write: kept apart from the ones that move money so the
 * service's wiring (ledger-grpc-service.ts) stays one screen, and so a reader sees at a glance
 * which methods can change a balance.
 */
export function createReadHandlers(db: Database, handle: HandleUnary): Pick<ledgerV1.LedgerServiceServer, ReadMethods> {
  return {
    getBalance: handle<ledgerV1.GetBalanceRequest, ledgerV1.GetBalanceResponse>('GetBalance', async (request) => {
      const balances = await getBalance(db, request.organisationId);
      const response: ledgerV1.GetBalanceResponse = balances
        ? { result: ledgerResultNames.getBalance.ok, ...balances }
        : {
          result: ledgerResultNames.getBalance.organisation_unknown,
          creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n,
        };
      return { response, outcome: balances ? 'ok' : 'organisation_unknown', subject: { organisationId: request.organisationId } };
    }),

    listUsage: handle<ledgerV1.ListUsageRequest, ledgerV1.ListUsageResponse>('ListUsage', async (request) => {
      const page = await listUsage(db, request);
      return {
        response: { records: page.records.map(usageRecordToProto), nextPageToken: page.nextPageToken },
        outcome: 'ok', subject: { organisationId: request.organisationId },
      };
    }),

    getProjectSpend: handle<ledgerV1.GetProjectSpendRequest, ledgerV1.GetProjectSpendResponse>('GetProjectSpend', async (request) => {
      const spend = await getProjectSpend(db, request.projectId);
      return { response: spend, outcome: 'ok', subject: { projectId: request.projectId } };
    }),

    summarizeUsage: handle<ledgerV1.SummarizeUsageRequest, ledgerV1.SummarizeUsageResponse>('SummarizeUsage', async (request) => {
      const rows = await summarizeUsage(db, request);
      return {
        response: {
          rows: rows.map((row) => ({
            ...row, billingMode: row.billingMode === null ? ledgerV1.BillingMode.BILLING_MODE_UNSPECIFIED : billingModesToProto[row.billingMode],
          })),
        },
        outcome: 'ok', subject: { organisationId: request.organisationId },
      };
    }),

    listBudgetAlerts: handle<ledgerV1.ListBudgetAlertsRequest, ledgerV1.ListBudgetAlertsResponse>('ListBudgetAlerts', async (request) => {
      const alerts = await listBudgetAlerts(db, request);
      return { response: { alerts: alerts.map(budgetAlertToProto) }, outcome: 'ok', subject: { afterId: request.afterId } };
    }),

    verify: handle<ledgerV1.VerifyRequest, ledgerV1.VerifyResponse>('Verify', async () => {
      const { accountsChecked, differences } = await verifyLedger(db);
      return {
        response: { accountsChecked, differences: differences.map(balanceDifferenceToProto) },
        outcome: differences.length === 0 ? 'clean' : 'differences', subject: { differences: String(differences.length) },
      };
    }),
  };
}
