import { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { GatewayError, toGrpcError } from '@gateway/errors';
import { duplexStream, reportCallFailure, unaryHandler, type Metadata } from '@gateway/grpc';
import { status as grpcStatus, type ServerDuplexStream, type ServerWritableStream } from '@grpc/grpc-js';
import { requestIdFrom, type Logger } from '@gateway/logger';
import { activeSpan, type ServiceTracing } from '@gateway/telemetry';
import { runAlone, type LedgerOperationRunner } from '../domain/apply-ledger-operations.ts';
import { checkpoint } from '../domain/checkpoint.ts';
import { credit } from '../domain/credit.ts';
import { verifyLedger } from '../domain/find-balance-differences.ts';
import { getProjectSpend } from '../domain/get-project-spend.ts';
import { acquireGrant, adjustGrant, findRecalledGrants, recallGrants, refusalLiftable } from '../domain/grants.ts';
import { listBudgetAlerts, parseAlertCursor, type BudgetAlertView } from '../domain/list-budget-alerts.ts';
import { setProjectBudget, waitForRecallAnswers } from '../domain/set-project-budget.ts';
import { summarizeUsage } from '../domain/summarize-usage.ts';
import { getBalance } from '../domain/get-balance.ts';
import { InvalidQueryError } from '../domain/invalid-query-error.ts';
import { listUsage } from '../domain/list-usage.ts';
import { openAccount } from '../domain/open-account.ts';
import { refundCredit } from '../domain/refund-credit.ts';
import { reverseRefund } from '../domain/reverse-refund.ts';
import { release } from '../domain/release.ts';
import { reserve, type ReserveResultName } from '../domain/reserve.ts';
import { settle } from '../domain/settle.ts';
import { observeRpc, operationLabel, type RpcMetrics } from './rpc-metrics.ts';
import { ledgerOutcomeAttribute, traceOperation } from './rpc-tracing.ts';
import {
  acquireGrantResults, adjustGrantResults, balanceDifferenceToProto, billingModeFromProto, billingModesToProto, checkpointResults, creditResults,
  openAccountResults, refundCreditResults, releaseResults, reserveResults, reverseRefundResults, setProjectBudgetResults, settleResults,
  usageRecordToProto, usageSourceFromProto,
} from './ledger-proto-tables.ts';

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

/** One Operate stream as the recall push sees it: how to push, and which recalls it was already told. */
interface RecallTarget {
  push(grantIds: string[]): void;
  /** Grant ids already pushed on this stream (pruned to those still held and recalled). */
  pushed: Set<string>;
  /**
   * Grants acquired or adjusted through this stream: its owner carves them only while this
   * stream is open (docs/proxy.md), so when the owner goes away they are closed at once.
   */
  grantIds: Set<string>;
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

/** The caller's request id from gRPC metadata (`x-request-id`), or a fresh one. */
function requestIdOf(metadata: Metadata): string {
  const [value] = metadata.get('x-request-id');
  return requestIdFrom(typeof value === 'string' ? value : undefined);
}

/** What a method's work returns: the response, and the outcome and ids to log beside it. */
interface Handled<Res> {
  response: Res;
  outcome: string;
  subject: Record<string, string>;
}

/** Reserve results after which held grants of the organisation (or project) are pulled back. */
const recallingReserveResults = new Set<ReserveResultName>(['insufficient_balance', 'project_budget_exceeded']);

/** The methods that only read: logged at debug, since they are polled (balances, usage, alerts). */
const readMethods = new Set(['GetBalance', 'ListUsage', 'GetProjectSpend', 'SummarizeUsage', 'ListBudgetAlerts']);

/**
 * The LedgerService implementation over the domain functions: decodes proto values, calls the
 * domain, encodes the outcome as the contract's result enum, and logs one line per call with
 * the caller's request id. Business outcomes are results; only a malformed read or an
 * unexpected failure becomes a gRPC error (the latter as INTERNAL with no detail). Reserve and
 * Settle go through `batcher` (group commit); the other methods run their own transactions.
 */
export function createLedgerGrpcService(
  db: Database, logger: Logger, watchOptions: BudgetAlertWatchOptions, batcher: LedgerOperationRunner = runAlone(db),
): LedgerGrpcService {
  /**
   * Runs one method's work as one call: its log line (info for calls that change state, debug for
   * reads, which the admin's dashboard and alert workers make every second or so); a malformed
   * read becomes invalid_request.
   */
  const perform = async <Req, Res>(method: string, work: (request: Req) => Promise<Handled<Res>>, request: Req, requestId: string): Promise<Res> => {
    const startedAt = performance.now();
    try {
      const { response, outcome, subject } = await work(request);
      const level = readMethods.has(method) ? 'debug' : 'info';
      logger[level]({ method, requestId, outcome, ...subject, durationMs: Math.round(performance.now() - startedAt) }, 'ledger call');
      // The call's span, when traced (rpc-tracing.ts makes it active); undefined with tracing off.
      activeSpan()?.setAttribute(ledgerOutcomeAttribute, outcome);
      return response;
    } catch (error) {
      if (error instanceof InvalidQueryError) {
        throw new GatewayError('invalid_request', { publicMessage: error.message, internalMessage: `${method}: ${error.message}` });
      }
      throw error;
    }
  };
  const handle = <Req, Res>(method: string, work: (request: Req) => Promise<Handled<Res>>) =>
    unaryHandler<Req, Res>(logger, method, (request, metadata) => perform(method, work, request, requestIdOf(metadata)));

  const grantSharePercent = watchOptions.grantSharePercent ?? 10;
  const { rpcMetrics } = watchOptions;
  const recallPollIntervalMs = watchOptions.recallPollIntervalMs ?? 100;
  const budgetRecallWaitMs = watchOptions.budgetRecallWaitMs ?? 25_000;
  // Recall push (docs/ledger.md "Recall"): owner (PROXY_ID) -> the Operate streams of this
  // replica that carried its grant messages.
  const recallTargets = new Map<string, Set<RecallTarget>>();
  let recallTimer: NodeJS.Timeout | undefined;
  let recallPolling = false;

  /** Pushes recalls to the streams of their owners that this replica serves, each id once per stream. */
  const pushRecalls = (recalled: ReadonlyArray<{ grantId: string; ownerId: string }>) => {
    const byOwner = new Map<string, string[]>();
    for (const { grantId, ownerId } of recalled) byOwner.set(ownerId, [...(byOwner.get(ownerId) ?? []), grantId]);
    for (const [ownerId, grantIds] of byOwner) {
      for (const target of recallTargets.get(ownerId) ?? []) {
        const fresh = grantIds.filter((id) => !target.pushed.has(id));
        if (fresh.length === 0) continue;
        for (const id of fresh) target.pushed.add(id);
        target.push(fresh);
        logger.info({ ownerId, grantIds: fresh }, 'grant recall pushed');
      }
    }
  };

  /** The poller: recalled held grants of the owners served here (marked by any replica), pushed if not yet. */
  const pollRecalls = async () => {
    if (recallPolling || recallTargets.size === 0) return;
    recallPolling = true;
    try {
      const recalled = await findRecalledGrants(db, [...recallTargets.keys()]);
      const stillRecalled = new Set(recalled.map((grant) => grant.grantId));
      // Forget pushes of grants resolved since: the set stays as small as what is outstanding.
      for (const targets of recallTargets.values()) {
        for (const target of targets) for (const id of target.pushed) if (!stillRecalled.has(id)) target.pushed.delete(id);
      }
      pushRecalls(recalled);
    } catch (error) {
      logger.warn({ err: error }, 'recall poll failed; will retry');
    } finally {
      recallPolling = false;
    }
  };

  /** Registers a stream as serving an owner (learned from its grant messages); starts the poller. */
  const serveOwner = (ownerId: string, target: RecallTarget) => {
    if (ownerId === '') return;
    let targets = recallTargets.get(ownerId);
    if (!targets) { targets = new Set(); recallTargets.set(ownerId, targets); }
    targets.add(target);
    if (!recallTimer && !operationStreamsEnded) {
      recallTimer = setInterval(() => { void pollRecalls(); }, recallPollIntervalMs);
      recallTimer.unref();
    }
  };

  /** Forgets a stream that ended; stops the poller when no owner is served. */
  const forgetTarget = (target: RecallTarget) => {
    for (const [ownerId, targets] of recallTargets) {
      targets.delete(target);
      if (targets.size === 0) recallTargets.delete(ownerId);
    }
    if (recallTargets.size === 0 && recallTimer) { clearInterval(recallTimer); recallTimer = undefined; }
  };

  /**
   * The owner of a stream went away (its process died, or its connection broke): the grants it
   * carved from through this stream are closed now, everything they hold back in the wallet, as
   * if recalled and answered with nothing uncarved. Its carves in flight, if the owner lives and
   * replays their Settles, are debited from available as carves settled after their grant was
   * closed (recorded as overrun). Without this, its money idled until the grants' deadlines and
   * other replicas' Reserves were refused meanwhile (NO_OVERSPEND's promise).
   */
  const closeGrantsOfGoneOwner = async (target: RecallTarget) => {
    for (const grantId of target.grantIds) {
      try {
        const outcome = await adjustGrant(db, {
          adjustmentId: `owner-stream-ended:${grantId}`, grantId, returnMicros: 0n, close: true, extendTtlMs: 0n, reason: 'owner stream ended',
        });
        if (outcome.result === 'ok') {
          logger.info({ grantId, ownerId: outcome.ownerId, returnedMicros: outcome.returnedMicros.toString() }, 'credit grant closed: its owner\'s Operate stream ended');
        }
      } catch (error) {
        // The deadline still bounds it: the sweeper expires it.
        logger.warn({ err: error, grantId }, 'credit grant of an ended Operate stream not closed; it expires at its deadline');
      }
    }
  };

  // The hot-path methods' work, shared by their unary calls and the Operate stream.
  const reserveWork = async (request: ledgerV1.ReserveRequest): Promise<Handled<ledgerV1.ReserveResponse>> => {
    const outcome = await reserve(batcher, {
      reservationId: request.reservationId, organisationId: request.organisationId, projectId: request.projectId,
      billingMode: billingModeFromProto(request.billingMode), amountMicros: request.amountMicros,
      ttlMs: request.ttlMs, modelSlug: request.modelSlug, ...(request.grantId !== undefined ? { grantId: request.grantId } : {}),
    });
    // A refusal while money may idle in other replicas' grants: pull them back, and say how many
    // are coming, so the caller retries briefly instead of answering 402 (NO_OVERSPEND's promise).
    // A refusal no returning hold could lift says so instead, and recalls nothing: the caller
    // answers at once, and this call takes no grant lock behind Settles in flight.
    let grantsRecalled: number | undefined;
    let liftable: boolean | undefined;
    if (recallingReserveResults.has(outcome.result) && request.grantId === undefined) {
      const budgetBound = outcome.result === 'project_budget_exceeded';
      liftable = await refusalLiftable(db, {
        organisationId: request.organisationId, projectId: request.projectId, amountMicros: request.amountMicros, budget: budgetBound,
      });
      grantsRecalled = 0;
      if (liftable) {
        const recalled = await recallGrants(db, {
          organisationId: budgetBound ? null : request.organisationId, projectId: budgetBound ? request.projectId : null,
        });
        grantsRecalled = recalled.length;
        pushRecalls(recalled.filter((grant) => grant.newlyRecalled));
      }
    }
    return {
      response: {
        ...outcome, result: reserveResults[outcome.result],
        ...(grantsRecalled !== undefined ? { grantsRecalled } : {}), ...(liftable !== undefined ? { liftable } : {}),
      },
      outcome: outcome.result,
      subject: {
        reservationId: request.reservationId, organisationId: request.organisationId,
        ...(request.grantId !== undefined ? { grantId: request.grantId } : {}),
        ...(grantsRecalled ? { grantsRecalled: String(grantsRecalled) } : {}),
      },
    };
  };
  const acquireGrantWork = async (request: ledgerV1.AcquireGrantRequest): Promise<Handled<ledgerV1.AcquireGrantResponse>> => {
    const { recalled, ...outcome } = await acquireGrant(db, {
      grantId: request.grantId, organisationId: request.organisationId, projectId: request.projectId,
      billingMode: billingModeFromProto(request.billingMode), minMicros: request.minMicros, wantMicros: request.wantMicros,
      ttlMs: request.ttlMs, ownerId: request.ownerId,
    }, grantSharePercent);
    pushRecalls(recalled.filter((grant) => grant.newlyRecalled));
    return {
      response: { ...outcome, result: acquireGrantResults[outcome.result] },
      outcome: outcome.result,
      subject: {
        grantId: request.grantId, organisationId: request.organisationId, projectId: request.projectId, ownerId: request.ownerId,
        grantedMicros: outcome.grantedMicros.toString(), ...(recalled.length > 0 ? { grantsRecalled: String(recalled.length) } : {}),
      },
    };
  };
  // The owner of the adjusted grant, for the stream that carried the adjustment.
  const adjustGrantWork = async (request: ledgerV1.AdjustGrantRequest): Promise<Handled<ledgerV1.AdjustGrantResponse> & { ownerId: string }> => {
    const { ownerId, ...outcome } = await adjustGrant(db, {
      adjustmentId: request.adjustmentId, grantId: request.grantId, returnMicros: request.returnMicros, close: request.close,
      extendTtlMs: request.extendTtlMs, reason: request.reason,
    });
    return {
      response: { ...outcome, result: adjustGrantResults[outcome.result] },
      outcome: outcome.result, ownerId,
      subject: {
        adjustmentId: request.adjustmentId, grantId: request.grantId, returnedMicros: outcome.returnedMicros.toString(),
        ...(request.close ? { close: 'true' } : {}),
      },
    };
  };
  const settleWork = async (request: ledgerV1.SettleRequest): Promise<Handled<ledgerV1.SettleResponse>> => {
    const outcome = await settle(batcher, {
      reservationId: request.reservationId, inputTokens: request.inputTokens, outputTokens: request.outputTokens,
      costMicros: request.costMicros, providerCostMicros: request.providerCostMicros, modelSlug: request.modelSlug,
      usageSource: usageSourceFromProto(request.usageSource), requestId: request.requestId,
      overrunOutputTokens: request.overrunOutputTokens,
      ...(request.grantId !== undefined ? { grantId: request.grantId, reservedMicros: request.reservedMicros ?? 0n } : {}),
      tokenClasses: request.tokenClasses,
    });
    return {
      response: { ...outcome, result: settleResults[outcome.result] },
      outcome: outcome.result, subject: { reservationId: request.reservationId },
    };
  };
  const releaseWork = async (request: ledgerV1.ReleaseRequest): Promise<Handled<ledgerV1.ReleaseResponse>> => {
    const outcome = await release(db, { reservationId: request.reservationId, reason: request.reason });
    return {
      response: { ...outcome, result: releaseResults[outcome.result] },
      outcome: outcome.result, subject: { reservationId: request.reservationId },
    };
  };
  const checkpointWork = async (request: ledgerV1.CheckpointRequest): Promise<Handled<ledgerV1.CheckpointResponse>> => {
    const outcome = await checkpoint(db, request);
    return {
      response: { ...outcome, result: checkpointResults[outcome.result] },
      outcome: outcome.result, subject: { reservationId: request.reservationId, sequence: request.sequence.toString() },
    };
  };

  const operationStreams = new Set<() => void>();
  let operationStreamsEnded = false;

  /**
   * Answers one message of an Operate stream exactly as the unary method would, errors included.
   * Grant messages also teach the stream's recall target which owner it serves.
   */
  const answerUntraced = async (message: ledgerV1.OperationRequest, target: RecallTarget): Promise<ledgerV1.OperationResponse> => {
    const { callId } = message;
    const requestId = requestIdFrom(message.requestId === '' ? undefined : message.requestId);
    let method = 'Operate';
    try {
      if (message.reserve) { method = 'Reserve'; return { callId, reserve: await perform(method, reserveWork, message.reserve, requestId) }; }
      if (message.settle) { method = 'Settle'; return { callId, settle: await perform(method, settleWork, message.settle, requestId) }; }
      if (message.release) { method = 'Release'; return { callId, release: await perform(method, releaseWork, message.release, requestId) }; }
      if (message.checkpoint) { method = 'Checkpoint'; return { callId, checkpoint: await perform(method, checkpointWork, message.checkpoint, requestId) }; }
      if (message.settleBatch) {
        // Each Settle exactly as alone (its own log line, through the batcher, so they group-commit
        // together); answered in the request's order. Any failure fails the message as a call.
        method = 'Settle';
        const settles = await Promise.all(message.settleBatch.settles.map((settleRequest) => perform(method, settleWork, settleRequest, requestId)));
        return { callId, settleBatch: { settles } };
      }
      if (message.acquireGrant) {
        method = 'AcquireGrant';
        serveOwner(message.acquireGrant.ownerId, target);
        const response = await perform(method, acquireGrantWork, message.acquireGrant, requestId);
        // Also when the answer cannot reach the owner any more: the grant is held all the same.
        if (response.result === ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK) target.grantIds.add(message.acquireGrant.grantId);
        return { callId, acquireGrant: response };
      }
      if (message.adjustGrant) {
        method = 'AdjustGrant';
        let ownerId = '';
        const response = await perform(method, async (request: ledgerV1.AdjustGrantRequest) => {
          const handled = await adjustGrantWork(request);
          ownerId = handled.ownerId;
          return handled;
        }, message.adjustGrant, requestId);
        serveOwner(ownerId, target);
        if (response.result === ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_OK && !message.adjustGrant.close) target.grantIds.add(message.adjustGrant.grantId);
        return { callId, adjustGrant: response };
      }
      throw new GatewayError('invalid_request', { publicMessage: 'The operation names no method.' });
    } catch (error) {
      const { errorCode, status } = reportCallFailure(logger, method, error, { requestId });
      return { callId, error: { code: status.code, message: status.details, errorCode } };
    }
  };
  // Each message in its own SERVER span when tracing is on; off, the untraced function itself (no wrapper per message).
  const { tracing } = watchOptions;
  const answerOperation = tracing?.enabled
    ? (message: ledgerV1.OperationRequest, target: RecallTarget) => traceOperation(tracing, message, () => answerUntraced(message, target))
    : answerUntraced;

  /**
   * Operate: each message is answered on its own (concurrently, through the same batcher as the
   * unary calls), in whatever order they finish. The stream ends when the caller half-closes it
   * or at shutdown, once every message received has been answered; a message that arrives after
   * shutdown began is answered UNAVAILABLE, so its caller retries on a new stream elsewhere.
   */
  const operate = (call: ServerDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>) => {
    const stream = duplexStream(call);
    const target: RecallTarget = {
      pushed: new Set(),
      grantIds: new Set(),
      push: (grantIds) => { if (!finished) void stream.send({ callId: 0n, recall: { grantIds } }); },
    };
    let unanswered = 0;
    let closing = false;
    let finished = false;
    // The caller ended the stream (half-close, cancel, broken connection), not this ledger's shutdown.
    let callerGone = false;
    const finish = () => {
      if (finished || unanswered > 0) return;
      finished = true;
      operationStreams.delete(close);
      forgetTarget(target);
      stream.end(); // nothing to end if the caller went away
      // Once every message it sent is answered, so a grant acquired in its last moments is closed too.
      if (callerGone && target.grantIds.size > 0) void closeGrantsOfGoneOwner(target);
    };
    const close = () => { closing = true; finish(); };
    operationStreams.add(close);
    if (operationStreamsEnded) close();
    void (async () => {
      try {
        for await (const message of stream) {
          if (closing) {
            if (!finished) {
              void stream.send({ callId: message.callId, error: { code: grpcStatus.UNAVAILABLE, message: 'The ledger is shutting down.', errorCode: 'service_unavailable' } });
            }
            continue;
          }
          unanswered += 1;
          const receivedAtMs = performance.now();
          // An answer to a caller that went away is dropped (send resolves false).
          void answerOperation(message, target).then((response) => {
            if (rpcMetrics) observeRpc(rpcMetrics, operationLabel(message), response.error?.code ?? grpcStatus.OK, receivedAtMs);
            return stream.send(response);
          }).finally(() => {
            unanswered -= 1;
            if (closing) finish();
          });
        }
      } catch {
        // The call broke: there is no one left to answer.
      }
      // The caller half-closed (or went away): end once what it sent is answered. A stream this
      // ledger ended at shutdown keeps its grants: the owner lives and carries them to another stream.
      if (!operationStreamsEnded) callerGone = true;
      close();
    })();
  };

  const watches = new Set<() => void>();
  let watchesEnded = false;

  /** Streams alerts after the cursor: the backlog first, then new ones as polling finds them. */
  const watchBudgetAlerts = (call: ServerWritableStream<ledgerV1.WatchBudgetAlertsRequest, ledgerV1.BudgetAlert>) => {
    const requestId = requestIdOf(call.metadata);
    let cursor: bigint;
    try {
      cursor = parseAlertCursor(call.request.afterId);
    } catch (error) {
      // grpc-js sends an emitted error object as the stream's status.
      call.emit('error', toGrpcError(new GatewayError('invalid_request', { publicMessage: (error as Error).message })));
      return;
    }
    if (watchesEnded) { call.end(); return; }
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      watches.delete(finish);
      if (!call.cancelled && !call.destroyed) call.end();
      logger.info({ method: 'WatchBudgetAlerts', requestId, cursor: cursor.toString() }, 'ledger watch ended');
    };
    watches.add(finish);
    call.on('cancelled', finish);
    call.on('error', finish);
    logger.info({ method: 'WatchBudgetAlerts', requestId, cursor: cursor.toString() }, 'ledger watch started');
    const poll = async () => {
      try {
        for (;;) {
          const alerts = await listBudgetAlerts(db, { afterId: cursor === 0n ? '' : cursor.toString(), organisationId: '', limit: 500 });
          for (const alert of alerts) {
            if (ended) return;
            call.write(budgetAlertToProto(alert));
            cursor = BigInt(alert.id);
          }
          if (alerts.length < 500) break;
        }
      } catch (error) {
        // A failed poll is retried at the next tick; the watcher keeps its cursor.
        logger.warn({ err: error, method: 'WatchBudgetAlerts', requestId }, 'budget alert poll failed; will retry');
      }
      if (!ended) timer = setTimeout(() => { void poll(); }, watchOptions.pollIntervalMs);
    };
    void poll();
  };

  const implementation: ledgerV1.LedgerServiceServer = {
    openAccount: handle<ledgerV1.OpenAccountRequest, ledgerV1.OpenAccountResponse>('OpenAccount', async (request) => {
      const outcome = await openAccount(db, request.organisationId);
      return {
        response: { result: openAccountResults[outcome.result], detail: outcome.detail },
        outcome: outcome.result, subject: { organisationId: request.organisationId },
      };
    }),

    reserve: handle('Reserve', reserveWork),

    // Credit grants (docs/ledger.md "Credit grants"). Unary calls teach no recall target: recalls
    // reach a replica on its Operate stream, or through AdjustGrantResponse.recalled.
    acquireGrant: handle('AcquireGrant', acquireGrantWork),
    adjustGrant: handle<ledgerV1.AdjustGrantRequest, ledgerV1.AdjustGrantResponse>('AdjustGrant', async (request) => {
      const { ownerId: _ownerId, ...handled } = await adjustGrantWork(request);
      return handled;
    }),

    settle: handle('Settle', settleWork),

    release: handle('Release', releaseWork),

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

    getBalance: handle<ledgerV1.GetBalanceRequest, ledgerV1.GetBalanceResponse>('GetBalance', async (request) => {
      const balances = await getBalance(db, request.organisationId);
      const response: ledgerV1.GetBalanceResponse = balances
        ? { result: ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_OK, ...balances }
        : {
          result: ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_ORGANISATION_UNKNOWN,
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

    checkpoint: handle('Checkpoint', checkpointWork),

    setProjectBudget: handle<ledgerV1.SetProjectBudgetRequest, ledgerV1.SetProjectBudgetResponse>('SetProjectBudget', async (request) => {
      const { recalled, ...outcome } = await setProjectBudget(db, request);
      // PROJECT_BUDGET: answer only when no grant recalled by the change can still be carved
      // from (its owner answered, or it is resolved or past its deadline), so no carve taken after
      // the answer passes the new cap. A connected owner answers within a round trip.
      pushRecalls(recalled.filter((grant) => grant.newlyRecalled));
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
            // The daily roll-up does not keep classes yet: every record counts as unclassified.
            tokenClasses: [], unclassifiedRequests: row.requests,
          })),
        },
        outcome: 'ok', subject: { organisationId: request.organisationId },
      };
    }),

    listBudgetAlerts: handle<ledgerV1.ListBudgetAlertsRequest, ledgerV1.ListBudgetAlertsResponse>('ListBudgetAlerts', async (request) => {
      const alerts = await listBudgetAlerts(db, request);
      return { response: { alerts: alerts.map(budgetAlertToProto) }, outcome: 'ok', subject: { afterId: request.afterId } };
    }),

    watchBudgetAlerts,
    operate,

    verify: handle<ledgerV1.VerifyRequest, ledgerV1.VerifyResponse>('Verify', async () => {
      const { accountsChecked, differences } = await verifyLedger(db);
      return {
        response: { accountsChecked, differences: differences.map(balanceDifferenceToProto) },
        outcome: differences.length === 0 ? 'clean' : 'differences', subject: { differences: String(differences.length) },
      };
    }),
  };

  return {
    implementation,
    endStreams() {
      watchesEnded = true;
      for (const finish of [...watches]) finish();
      operationStreamsEnded = true;
      for (const close of [...operationStreams]) close();
      if (recallTimer) { clearInterval(recallTimer); recallTimer = undefined; }
    },
  };
}

/** A budget alert as the proto carries it. */
function budgetAlertToProto(alert: BudgetAlertView): ledgerV1.BudgetAlert {
  return alert;
}
