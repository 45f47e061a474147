import { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { duplexStream, reportCallFailure } from '@gateway/grpc';
import { status as grpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import { requestIdFrom, type Logger } from '@gateway/logger';
import type { ServiceTracing } from '@gateway/telemetry';
import { adjustGrant } from '../domain/grants.ts';
import type { Perform } from './ledger-call.ts';
import type { HotPathWork } from './ledger-hot-path-work.ts';
import type { RecallPush, RecallTarget } from './recall-push.ts';
import { observeOperation, type RpcMetrics } from './rpc-metrics.ts';
import { traceOperation } from './rpc-tracing.ts';

/** What the Operate streams of one replica run on. */
export interface OperateStreamDeps {
  db: Database;
  logger: Logger;
  perform: Perform;
  work: HotPathWork;
  recallPush: RecallPush;
  /** Where each message is counted; none: not counted. */
  rpcMetrics?: RpcMetrics | undefined;
  /** Each message a SERVER span when enabled; none or off: no spans. */
  tracing?: ServiceTracing | undefined;
}

/** The Operate streams of one replica: the handler, and ending them all at shutdown. */
export interface OperateStreams {
  /** The Operate handler. */
  operate(call: ServerDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>): void;
  /** Ends every stream once the messages it received are answered (later ones are answered UNAVAILABLE); stops the recall push. */
  end(): void;
}

/**
 * The owner of a stream went away (its process died, or its connection broke): the grants it
 * carved from through this stream are closed now, everything they hold back in the wallet, as
 * if recalled and answered with nothing uncarved. Its carves in flight, if the owner lives and
 * replays their Settles, are debited from available as carves settled after their grant was
 * closed (recorded as overrun). Without this, its money idled until the grants' deadlines and
 * other replicas' Reserves were refused meanwhile (NO_OVERSPEND's promise).
 */
async function closeGrantsOfGoneOwner(db: Database, logger: Logger, target: RecallTarget): Promise<void> {
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
}

/**
 * Answers one message of an Operate stream exactly as the unary method would, errors included.
 * Grant messages also teach the stream's recall target which owner it serves.
 */
async function answerUntraced(deps: OperateStreamDeps, message: ledgerV1.OperationRequest, target: RecallTarget): Promise<ledgerV1.OperationResponse> {
  const { perform, work, recallPush, logger } = deps;
  const { callId } = message;
  const requestId = requestIdFrom(message.requestId === '' ? undefined : message.requestId);
  let method = 'Operate';
  try {
    if (message.reserve) { method = 'Reserve'; return { callId, reserve: await perform(method, work.reserve, message.reserve, requestId) }; }
    if (message.settle) { method = 'Settle'; return { callId, settle: await perform(method, work.settle, message.settle, requestId) }; }
    if (message.release) { method = 'Release'; return { callId, release: await perform(method, work.release, message.release, requestId) }; }
    if (message.checkpoint) { method = 'Checkpoint'; return { callId, checkpoint: await perform(method, work.checkpoint, message.checkpoint, requestId) }; }
    if (message.settleBatch) {
      // Each Settle exactly as alone (its own log line, through the batcher, so they group-commit
      // together); answered in the request's order. Any failure fails the message as a call.
      method = 'Settle';
      const settles = await Promise.all(message.settleBatch.settles.map((settleRequest) => perform(method, work.settle, settleRequest, requestId)));
      return { callId, settleBatch: { settles } };
    }
    if (message.acquireGrant) {
      method = 'AcquireGrant';
      recallPush.serveOwner(message.acquireGrant.ownerId, target);
      const response = await perform(method, work.acquireGrant, message.acquireGrant, requestId);
      // Also when the answer cannot reach the owner any more: the grant is held all the same.
      if (response.result === ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK) target.grantIds.add(message.acquireGrant.grantId);
      return { callId, acquireGrant: response };
    }
    if (message.adjustGrant) {
      method = 'AdjustGrant';
      let ownerId = '';
      const response = await perform(method, async (request: ledgerV1.AdjustGrantRequest) => {
        const handled = await work.adjustGrant(request);
        ownerId = handled.ownerId;
        return handled;
      }, message.adjustGrant, requestId);
      recallPush.serveOwner(ownerId, target);
      if (response.result === ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_OK && !message.adjustGrant.close) target.grantIds.add(message.adjustGrant.grantId);
      return { callId, adjustGrant: response };
    }
    throw new GatewayError('invalid_request', { publicMessage: 'The operation names no method.' });
  } catch (error) {
    const { errorCode, status } = reportCallFailure(logger, method, error, { requestId });
    return { callId, error: { code: status.code, message: status.details, errorCode } };
  }
}

/**
 * Operate: each message is answered on its own (concurrently, through the same batcher as the
 * unary calls), in whatever order they finish. The stream ends when the caller half-closes it
 * or at shutdown, once every message received has been answered; a message that arrives after
 * shutdown began is answered UNAVAILABLE, so its caller retries on a new stream elsewhere.
 */
export function createOperateStreams(deps: OperateStreamDeps): OperateStreams {
  const { db, logger, recallPush, rpcMetrics, tracing } = deps;
  const operationStreams = new Set<() => void>();
  let operationStreamsEnded = false;
  // Each message in its own SERVER span when tracing is on; off, the untraced function itself (no wrapper per message).
  const answerOperation = tracing?.enabled
    ? (message: ledgerV1.OperationRequest, target: RecallTarget) => traceOperation(tracing, message, () => answerUntraced(deps, message, target))
    : (message: ledgerV1.OperationRequest, target: RecallTarget) => answerUntraced(deps, message, target);

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
      recallPush.forget(target);
      stream.end(); // nothing to end if the caller went away
      // Once every message it sent is answered, so a grant acquired in its last moments is closed too.
      if (callerGone && target.grantIds.size > 0) void closeGrantsOfGoneOwner(db, logger, target);
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
            if (rpcMetrics) observeOperation(rpcMetrics, message, response.error?.code ?? grpcStatus.OK, receivedAtMs);
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

  return {
    operate,
    end() {
      operationStreamsEnded = true;
      recallPush.stop();
      for (const close of [...operationStreams]) close();
    },
  };
}
