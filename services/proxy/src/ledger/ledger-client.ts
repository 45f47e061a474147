import { ledgerV1 } from '@gateway/contracts';
import { fromGrpcError } from '@gateway/errors';
import { channelCredentials, clientChannelOptions, type GrpcTransportSecurity } from '@gateway/grpc';
import { activeTraceparent } from '@gateway/telemetry';
import { connectivityState as ConnectivityState, Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { LedgerOperationStream, operationError, type Operation } from './operation-stream.ts';

/** Options of the ledger client. */
export interface LedgerClientOptions {
  /** host:port of the ledger's gRPC server. */
  address: string;
  /** Deadline of each call, ms. */
  callTimeoutMs: number;
  /** The proxy's certificate (its identity at the ledger) and the CA, or plaintext under GRPC_INSECURE. */
  security: GrpcTransportSecurity;
}

/** What the proxy's channel to the ledger is doing, for /readyz's body. */
export type LedgerChannelState = 'up' | 'connecting' | 'idle' | 'down';

/** The hot-path operations the Operate stream carries. */
type OperationKind = 'reserve' | 'release' | 'checkpoint' | 'acquireGrant' | 'adjustGrant' | 'settleBatch';

/**
 * Most Settles in one settle_batch message: after a ledger outage the outbox may hand over
 * thousands at once, and one message must stay far below gRPC's 4 MiB receive limit (a Settle is
 * a few hundred bytes) and not hold the ledger's batcher for long.
 */
const maxSettlesPerBatch = 512;

/**
 * How long a settle_batch message waits for its answer, ms: at least a minute. A batch the ledger
 * is slow to answer is being applied, so sending its Settles again after LEDGER_CALL_TIMEOUT_MS
 * only makes replays, which the ledger applies one by one at several times the cost of the set-based
 * batch (sql/ledger_apply_batch_set.sql takes no replay): a ledger a few seconds behind then fell
 * further behind (issue 30's soak: throughput halved, the oldest Settle 27 s old). A broken stream
 * still fails the message at once, and the outbox sends it again.
 */
function settleBatchDeadlineMs(callTimeoutMs: number): number {
  return Math.max(callTimeoutMs, 60_000);
}

/** A Settle waiting for the next settle_batch message. */
interface QueuedSettle {
  request: ledgerV1.SettleRequest;
  resolve: (response: ledgerV1.SettleResponse) => void;
  reject: (error: unknown) => void;
}

/**
 * The proxy's side of the ledger: one attempt of each hot-path call. Reserve maps a failed call
 * to `service_unavailable`; Settle and Release throw the call's error, and the settle outbox
 * (settle-outbox.ts) repeats them until the ledger answers. All of them (and the grant calls)
 * travel as messages on one Operate stream; Settles in settle_batch messages. Proto in, proto out: `grpc-ledger.ts` turns it into the billing's Ledger port.
 */
export class LedgerClient {
  readonly #client: ledgerV1.LedgerServiceClient;
  readonly #operations: LedgerOperationStream;
  readonly #callTimeoutMs: number;
  /** Settles queued while a settle_batch is in flight: they leave together when it is answered. */
  #queuedSettles: QueuedSettle[] = [];
  #batchInFlight = false;

  /** Creates the channel; it connects on first use and reconnects by itself. */
  constructor(options: LedgerClientOptions) {
    // Capped reconnect backoff and keepalive (clientChannelOptions): a ledger back after a restart is found within ~2 s.
    this.#client = new ledgerV1.LedgerServiceClient(options.address, channelCredentials(options.security), clientChannelOptions);
    this.#operations = new LedgerOperationStream(this.#client);
    this.#callTimeoutMs = options.callTimeoutMs;
  }

  /**
   * One hot-path operation as a message on the Operate stream. Throws a grpc-js-shaped call
   * error (the call failed, or the ledger answered the message with an error), so callers map
   * failures as for any call. The message carries the caller's trace context (the request's
   * step span, docs/tracing.md) unless `traced` is false; with tracing off there is none.
   */
  async #operate<Kind extends OperationKind>(
    kind: Kind, request: NonNullable<ledgerV1.OperationRequest[Kind]>, traced = true, deadlineMs = this.#callTimeoutMs,
  ): Promise<NonNullable<ledgerV1.OperationResponse[Kind]>> {
    const operation: Operation = { requestId: '', [kind]: request };
    const traceparent = traced ? activeTraceparent() : undefined;
    if (traceparent !== undefined) operation.traceparent = traceparent;
    const response = await this.#operations.send(operation, deadlineMs);
    if (response.error !== undefined) throw operationError(response.error.code, response.error.message, response.error.errorCode);
    const answer = response[kind];
    if (answer === undefined) throw operationError(GrpcStatus.INTERNAL, `ledger answered a ${kind} with another operation`);
    return answer as NonNullable<ledgerV1.OperationResponse[Kind]>;
  }

  /** Holds a Reserve. A failed call (ledger down, deadline) throws `service_unavailable`. */
  async reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse> {
    try {
      return await this.#operate('reserve', request);
    } catch (error) {
      throw fromGrpcError(error);
    }
  }

  /**
   * Records a stream's running usage, once (a checkpoint is superseded by the next one, so a
   * retry is not worth its delay). Throws the gRPC error of a failed call.
   */
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<ledgerV1.CheckpointResponse> {
    return this.#operate('checkpoint', request);
  }

  /**
   * Settles a reservation, once; throws the call's error (the outbox sends it again). Settles
   * travel in settle_batch messages: with no batch in flight a Settle leaves at once (alone, no
   * timer); those that arrive while one is in flight leave together in one message as soon as
   * it is answered, so a busy replica sends one message per ledger round trip, not per request.
   */
  settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse> {
    // Each Settle carries its own request's trace context: the batch it leaves in may hold
    // Settles of many requests, and the ledger's batch span links to each of them.
    const traceparent = activeTraceparent();
    const carried = traceparent === undefined ? request : { ...request, traceparent };
    return new Promise((resolve, reject) => {
      this.#queuedSettles.push({ request: carried, resolve, reject });
      if (!this.#batchInFlight) void this.#sendBatch();
    });
  }

  /** Sends the queued Settles in settle_batch messages (at most maxSettlesPerBatch each), one in flight at a time. */
  async #sendBatch(): Promise<void> {
    this.#batchInFlight = true;
    while (this.#queuedSettles.length > 0) {
      const batch = this.#queuedSettles.splice(0, maxSettlesPerBatch);
      try {
        // The message itself is no one request's: its Settles carry their own contexts.
        const answer = await this.#operate('settleBatch', { settles: batch.map((queued) => queued.request) }, false, settleBatchDeadlineMs(this.#callTimeoutMs));
        if (answer.settles.length !== batch.length) {
          throw operationError(GrpcStatus.INTERNAL, `ledger answered ${answer.settles.length} of a batch of ${batch.length} settles`);
        }
        batch.forEach((queued, index) => queued.resolve(answer.settles[index]!));
      } catch (error) {
        // The batch failed as a call: each Settle failed, and the outbox sends each again.
        for (const queued of batch) queued.reject(error);
      }
    }
    this.#batchInFlight = false;
  }

  /** Holds a credit grant, once; throws the call's error. */
  acquireGrant(request: ledgerV1.AcquireGrantRequest): Promise<ledgerV1.AcquireGrantResponse> {
    return this.#operate('acquireGrant', request);
  }

  /** Adjusts (returns, closes, extends) a credit grant, once; throws the call's error. */
  adjustGrant(request: ledgerV1.AdjustGrantRequest): Promise<ledgerV1.AdjustGrantResponse> {
    // Grant housekeeping (returns, extensions, closes), not any one request's work: untraced.
    return this.#operate('adjustGrant', request, false);
  }

  /** Routes the grant ids of every GrantRecall the ledger pushes on the Operate stream to `listener`. */
  onRecall(listener: (grantIds: readonly string[]) => void): void {
    this.#operations.onRecall((recall) => listener(recall.grantIds));
  }

  /** Calls `listener` when the Operate stream ends or breaks (not at close()): its grants are to be carved from no more. */
  onStreamEnded(listener: () => void): void {
    this.#operations.onEnded(listener);
  }

  /** Releases a reservation, once; throws the call's error (the outbox sends it again). */
  release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse> {
    return this.#operate('release', request);
  }

  /**
   * Sends a batch of finished requests to the request log (RecordRequests), once, as a unary call
   * beside the Operate stream (not hot-path work: never on a request's way); resolves with how
   * many the ledger wrote now, throws the call's error.
   */
  recordRequests(records: ledgerV1.RequestRecord[]): Promise<number> {
    return new Promise((resolve, reject) => {
      // A batch may be up to 1,000 records: at least 5 s, however short the hot path's deadline.
      const deadline = Date.now() + Math.max(this.#callTimeoutMs, 5_000);
      this.#client.recordRequests({ records }, new Metadata(), { deadline }, (error, response) => {
        if (error) reject(error);
        else resolve(response.recorded);
      });
    });
  }

  /** The state of the channel to the ledger (no connection attempt is started by asking). */
  channelState(): LedgerChannelState {
    const state = this.#client.getChannel().getConnectivityState(false);
    if (state === ConnectivityState.READY) return 'up';
    if (state === ConnectivityState.CONNECTING) return 'connecting';
    if (state === ConnectivityState.IDLE) return 'idle';
    return 'down';
  }

  /** Ends the operation stream and closes the channel. */
  close(): void {
    this.#operations.close();
    this.#client.close();
  }
}
