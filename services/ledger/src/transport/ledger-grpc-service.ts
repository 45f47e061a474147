import type { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { unaryHandler } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { ServiceTracing } from '@gateway/telemetry';
import { runAlone, type LedgerOperationRunner } from '../domain/apply-ledger-operations.ts';
import { credit } from '../domain/credit.ts';
import { setProjectBudget, waitForRecallAnswers } from '../domain/set-project-budget.ts';
import { openAccount } from '../domain/open-account.ts';
import { refundCredit } from '../domain/refund-credit.ts';
import { reverseRefund } from '../domain/reverse-refund.ts';
import { createBudgetAlertWatch } from './budget-alert-watch.ts';
import { createPerform, requestIdOf, type Handled } from './ledger-call.ts';
import { createHotPathWork } from './ledger-hot-path-work.ts';
import {
  creditResults, openAccountResults, refundCreditResults, reverseRefundResults, setProjectBudgetResults,
} from './ledger-proto-tables.ts';
import { createReadHandlers, type HandleUnary } from './ledger-read-handlers.ts';
import { createRequestLogReadHandlers } from './ledger-request-log-handlers.ts';
import { createListProjectSpendsHandler } from './list-project-spends-handler.ts';
import { createOperateStreams } from './operate-stream.ts';
import { createRecallPush } from './recall-push.ts';
import { createRecordRequestsHandler } from './record-requests-handler.ts';
import { createSummarizeDeploymentsHandler } from './summarize-deployments-handler.ts';
import type { RpcMetrics } from './rpc-metrics.ts';

/** How a budget alert watch behaves. */
export interface BudgetAlertWatchOptions {
  /** How often a watch looks for new alerts, ms. Polling the table works with any number of replicas. */
  pollIntervalMs: number;
  /** Largest share of available (and budget headroom) one credit grant may hold, percent (LEDGER_GRANT_MAX_SHARE_PERCENT; default 10). */
  grantSharePercent?: number;
  /** How often recalled grants of the owners this replica serves are looked for, ms (LEDGER_RECALL_POLL_INTERVAL_MS; default 100). */
  recallPollIntervalMs?: number;
  /** Longest a budget change waits for the owners of the grants it recalled, ms (LEDGER_BUDGET_RECALL_WAIT_MS; default 25,000). */
  budgetRecallWaitMs?: number;
  /** Where each Operate-stream operation is counted (unary calls are counted by instrumentUnaryCalls around the service); none: not counted. */
  rpcMetrics?: RpcMetrics;
  /** The ledger's tracing: each Operate message a SERVER span (unary calls: traceUnaryCalls around the service); none or off: no spans. */
  tracing?: ServiceTracing;
}

/** The extra handle of the service: ending open watches at shutdown, so the gRPC drain is not held up by them. */
export interface LedgerGrpcService {
  implementation: ledgerV1.LedgerServiceServer;
  /**
   * Ends every open WatchBudgetAlerts stream (OK status) and refuses new ones, and ends every
   * Operate stream once the messages it received are answered (later ones are answered
   * UNAVAILABLE): the gRPC drain then waits only for unary calls and those answers.
   */
  endStreams(): void;
}

/**
 * The LedgerService implementation over the domain functions: decodes proto values, calls the
 * domain, encodes the outcome as the contract's result enum, and logs one line per call with
 * the caller's request id. Business outcomes are results; only a malformed read or an
 * unexpected failure becomes a gRPC error (the latter as INTERNAL with no detail). Reserve and
 * Settle go through `batcher` (group commit); the other methods run their own transactions.
 * The Operate stream (operate-stream.ts), the recall push (recall-push.ts) and the alert watch
 * (budget-alert-watch.ts) live beside this file, the read-only handlers in ledger-read-handlers.ts;
 * this one wires them and the handlers that write.
 */
export function createLedgerGrpcService(
  db: Database, logger: Logger, watchOptions: BudgetAlertWatchOptions, batcher: LedgerOperationRunner = runAlone(db),
): LedgerGrpcService {
  const perform = createPerform(logger);
  const handle: HandleUnary = <Req, Res>(method: string, work: (request: Req) => Promise<Handled<Res>>) =>
    unaryHandler<Req, Res>(logger, method, (request, metadata) => perform(method, work, request, requestIdOf(metadata)));

  const budgetRecallWaitMs = watchOptions.budgetRecallWaitMs ?? 25_000;
  const recallPush = createRecallPush(db, logger, watchOptions.recallPollIntervalMs ?? 100);
  const work = createHotPathWork(db, batcher, recallPush, watchOptions.grantSharePercent ?? 10);
  const operateStreams = createOperateStreams({
    db, logger, perform, work, recallPush, rpcMetrics: watchOptions.rpcMetrics, tracing: watchOptions.tracing,
  });
  const alertWatch = createBudgetAlertWatch(db, logger, watchOptions.pollIntervalMs);

  const implementation: ledgerV1.LedgerServiceServer = {
    ...createReadHandlers(db, handle),
    ...createRecordRequestsHandler(db, handle),
    ...createRequestLogReadHandlers(db, handle),
    ...createListProjectSpendsHandler(db, handle),
    ...createSummarizeDeploymentsHandler(db, handle),

    openAccount: handle<ledgerV1.OpenAccountRequest, ledgerV1.OpenAccountResponse>('OpenAccount', async (request) => {
      const outcome = await openAccount(db, request.organisationId);
      return {
        response: { result: openAccountResults[outcome.result], detail: outcome.detail },
        outcome: outcome.result, subject: { organisationId: request.organisationId },
      };
    }),

    reserve: handle('Reserve', work.reserve),

    // Credit grants (docs/ledger.md "Credit grants"). Unary calls teach no recall target: recalls
    // reach a replica on its Operate stream, or through AdjustGrantResponse.recalled.
    acquireGrant: handle('AcquireGrant', work.acquireGrant),
    adjustGrant: handle<ledgerV1.AdjustGrantRequest, ledgerV1.AdjustGrantResponse>('AdjustGrant', async (request) => {
      const { ownerId: _ownerId, ...handled } = await work.adjustGrant(request);
      return handled;
    }),

    settle: handle('Settle', work.settle),

    release: handle('Release', work.release),

    credit: handle<ledgerV1.CreditRequest, ledgerV1.CreditResponse>('Credit', async (request) => {
      const outcome = await credit(db, {
        creditId: request.creditId, organisationId: request.organisationId, amountMicros: request.amountMicros, reason: request.reason,
        purchased: request.purchased,
      });
      return {
        response: { ...outcome, result: creditResults[outcome.result] },
        outcome: outcome.result, subject: { creditId: request.creditId, organisationId: request.organisationId },
      };
    }),

    refundCredit: handle<ledgerV1.RefundCreditRequest, ledgerV1.RefundCreditResponse>('RefundCredit', async (request) => {
      const outcome = await refundCredit(db, {
        refundId: request.refundId, organisationId: request.organisationId, creditId: request.creditId,
        amountMicros: request.amountMicros, reason: request.reason, upToAvailable: request.upToAvailable,
      });
      return {
        response: { ...outcome, result: refundCreditResults[outcome.result] },
        outcome: outcome.result,
        subject: { refundId: request.refundId, organisationId: request.organisationId, creditId: request.creditId },
      };
    }),

    reverseRefund: handle<ledgerV1.ReverseRefundRequest, ledgerV1.ReverseRefundResponse>('ReverseRefund', async (request) => {
      const outcome = await reverseRefund(db, {
        reversalId: request.reversalId, organisationId: request.organisationId, refundId: request.refundId, reason: request.reason,
      });
      return {
        response: { ...outcome, result: reverseRefundResults[outcome.result] },
        outcome: outcome.result,
        subject: { reversalId: request.reversalId, organisationId: request.organisationId, refundId: request.refundId },
      };
    }),

    checkpoint: handle('Checkpoint', work.checkpoint),

    setProjectBudget: handle<ledgerV1.SetProjectBudgetRequest, ledgerV1.SetProjectBudgetResponse>('SetProjectBudget', async (request) => {
      const { recalled, ...outcome } = await setProjectBudget(db, request);
      // PROJECT_BUDGET: answer only when no grant recalled by the change can still be carved
      // from (its owner answered, or it is resolved or past its deadline), so no carve taken after
      // the answer passes the new cap. A connected owner answers within a round trip.
      recallPush.push(recalled.filter((grant) => grant.newlyRecalled));
      const pending = await waitForRecallAnswers(db, recalled.map((grant) => grant.grantId), { timeoutMs: budgetRecallWaitMs, pollIntervalMs: 10 });
      if (pending.length > 0) {
        logger.warn({ projectId: request.projectId, grantIds: pending }, 'budget change answered with recalled grants unanswered before their deadline; they may carve until it passes');
      }
      return {
        response: { ...outcome, result: setProjectBudgetResults[outcome.result] },
        outcome: outcome.result,
        subject: {
          organisationId: request.organisationId, projectId: request.projectId,
          ...(recalled.length > 0 ? { grantsRecalled: String(recalled.length) } : {}),
        },
      };
    }),

    watchBudgetAlerts: alertWatch.watch,
    operate: operateStreams.operate,

  };

  return {
    implementation,
    endStreams() {
      alertWatch.end();
      operateStreams.end();
    },
  };
}
