import { ledgerV1 } from '@gateway/contracts';
import { fromGrpcError, type GatewayError } from '@gateway/errors';
import { callUnary, insecureChannel } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { LedgerOperationStream, operationError } from './operation-stream.ts';

/** Options of the ledger client. */
export interface LedgerClientOptions {
  /** host:port of the ledger's gRPC server. */
  address: string;
  /** Deadline of each call, ms. */
  callTimeoutMs: number;
  logger: Logger;
  /** Waits before the 2nd, 3rd, … attempt of a settle or release, ms. */
  retryDelaysMs?: readonly number[];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => { setTimeout(resolve, ms); });
}

/** Settle results after which trying again cannot help (the proto documents them as not retryable). */
const finalSettleResults: ReadonlySet<ledgerV1.SettleResult> = new Set([
  ledgerV1.SettleResult.SETTLE_RESULT_OK,
  ledgerV1.SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT,
  ledgerV1.SettleResult.SETTLE_RESULT_INVALID_ARGUMENT,
  ledgerV1.SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN,
  ledgerV1.SettleResult.SETTLE_RESULT_ALREADY_RESOLVED,
]);

/** The hot-path operations the Operate stream carries. */
type OperationKind = 'reserve' | 'settle' | 'release' | 'checkpoint';

/**
 * The proxy's side of the ledger: Reserve once (the caller maps its result), and Settle or
 * Release with retries. Both are idempotent on the reservation id, so a retry after a timeout
 * can never debit twice. If every attempt fails, the reservation is left to the ledger's expiry
 * sweeper, and the caller still answers its client. All four hot-path calls travel as messages
 * on one Operate stream (unary calls for a ledger without it).
 */

export class LedgerClient {
  readonly #client: ledgerV1.LedgerServiceClient;
  readonly #operations: LedgerOperationStream;
  readonly #callTimeoutMs: number;
  readonly #logger: Logger;
  readonly #retryDelaysMs: readonly number[];

  /** Creates the channel; it connects on first use and reconnects by itself. */
  constructor(options: LedgerClientOptions) {
    this.#client = new ledgerV1.LedgerServiceClient(options.address, insecureChannel());
    this.#operations = new LedgerOperationStream(this.#client);
    this.#callTimeoutMs = options.callTimeoutMs;
    this.#logger = options.logger;
    this.#retryDelaysMs = options.retryDelaysMs ?? [100, 500];
  }

  /**
   * One hot-path operation: a message on the Operate stream, or a unary call when the ledger
   * has no Operate (an older ledger during a rolling deploy). Throws a grpc-js-shaped call error
   * either way, so callers map failures alike.
   */
  async #operate<Kind extends OperationKind>(
    kind: Kind, request: NonNullable<ledgerV1.OperationRequest[Kind]>, unary: () => Promise<NonNullable<ledgerV1.OperationResponse[Kind]>>,
  ): Promise<NonNullable<ledgerV1.OperationResponse[Kind]>> {
    if (!this.#operations.unsupported) {
      try {
        const response = await this.#operations.send({ requestId: '', [kind]: request }, this.#callTimeoutMs);
        if (response.error !== undefined) throw operationError(response.error.code, response.error.message, response.error.errorCode);
        const answer = response[kind];
        if (answer === undefined) throw operationError(GrpcStatus.INTERNAL, `ledger answered a ${kind} with another operation`);
        return answer as NonNullable<ledgerV1.OperationResponse[Kind]>;
      } catch (error) {
        // The stream itself was refused as unknown: this ledger predates it. Anything else is the call's failure.
        const unimplemented = (error as { code?: unknown }).code === GrpcStatus.UNIMPLEMENTED;
        if (!(unimplemented && this.#operations.unsupported)) throw error;
        this.#logger.warn('the ledger does not serve the Operate stream; using unary calls');
      }
    }
    return unary();
  }

  /** Holds a Reserve. A failed call (ledger down, deadline) throws `service_unavailable`. */
  async reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse> {
    try {
      return await this.#operate('reserve', request, () => callUnary(this.#client.reserve, this.#client, request, this.#callTimeoutMs));
    } catch (error) {
      throw fromGrpcError(error);
    }
  }

  /**
   * Records a stream's running usage, once (a checkpoint is superseded by the next one, so a
   * retry is not worth its delay). Throws the gRPC error of a failed call, UNIMPLEMENTED included.
   */
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<ledgerV1.CheckpointResponse> {
    return this.#operate('checkpoint', request, () => callUnary(this.#client.checkpoint, this.#client, request, this.#callTimeoutMs));
  }

  /** Settles a reservation, retrying failed calls; undefined when no attempt got an answer. */
  async settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse | undefined> {
    return this.#withRetries('Settle', request.reservationId, async () => {
      const response = await this.#operate('settle', request, () => callUnary(this.#client.settle, this.#client, request, this.#callTimeoutMs));
      return { response, final: finalSettleResults.has(response.result) };
    });
  }

  /** Releases a reservation that reached no upstream, retrying failed calls; undefined when none got an answer. */
  async release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse | undefined> {
    return this.#withRetries('Release', request.reservationId, async () => {
      const response = await this.#operate('release', request, () => callUnary(this.#client.release, this.#client, request, this.#callTimeoutMs));
      return { response, final: response.result !== ledgerV1.ReleaseResult.RELEASE_RESULT_UNSPECIFIED };
    });
  }

  async #withRetries<Response>(
    method: string,
    reservationId: string,
    attempt: () => Promise<{ response: Response; final: boolean }>,
  ): Promise<Response | undefined> {
    let last: Response | undefined;
    for (let attemptIndex = 0; attemptIndex <= this.#retryDelaysMs.length; attemptIndex += 1) {
      if (attemptIndex > 0) await sleep(this.#retryDelaysMs[attemptIndex - 1]!);
      try {
        const { response, final } = await attempt();
        last = response;
        if (final) return response;
      } catch (error) {
        const gatewayError: GatewayError = fromGrpcError(error);
        this.#logger.warn({ reservationId, method, attempt: attemptIndex + 1, err: { message: gatewayError.message } }, `ledger ${method} failed`);
      }
    }
    return last;
  }

  /** Ends the operation stream and closes the channel. */
  close(): void {
    this.#operations.close();
    this.#client.close();
  }
}
