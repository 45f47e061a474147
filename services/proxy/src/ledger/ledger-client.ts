import { ledgerV1 } from '@gateway/contracts';
import { fromGrpcError, type GatewayError } from '@gateway/errors';
import { callUnary, insecureChannel } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';

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

/**
 * The proxy's side of the ledger: Reserve once (the caller maps its result), and Settle or
 * Release with retries. Both are idempotent on the reservation id, so a retry after a timeout
 * can never debit twice. If every attempt fails, the reservation is left to the ledger's expiry
 * sweeper, and the caller still answers its client.
 */
export class LedgerClient {
  readonly #client: ledgerV1.LedgerServiceClient;
  readonly #callTimeoutMs: number;
  readonly #logger: Logger;
  readonly #retryDelaysMs: readonly number[];

  /** Creates the channel; it connects on first use and reconnects by itself. */
  constructor(options: LedgerClientOptions) {
    this.#client = new ledgerV1.LedgerServiceClient(options.address, insecureChannel());
    this.#callTimeoutMs = options.callTimeoutMs;
    this.#logger = options.logger;
    this.#retryDelaysMs = options.retryDelaysMs ?? [100, 500];
  }

  /** Holds a Reserve. A failed call (ledger down, deadline) throws `service_unavailable`. */
  async reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse> {
    try {
      return await callUnary(this.#client.reserve, this.#client, request, this.#callTimeoutMs);
    } catch (error) {
      throw fromGrpcError(error);
    }
  }

  /**
   * Records a stream's running usage, once (a checkpoint is superseded by the next one, so a
   * retry is not worth its delay). Throws the gRPC error of a failed call, UNIMPLEMENTED included.
   */
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<ledgerV1.CheckpointResponse> {
    return callUnary(this.#client.checkpoint, this.#client, request, this.#callTimeoutMs);
  }

  /** Settles a reservation, retrying failed calls; undefined when no attempt got an answer. */
  async settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse | undefined> {
    return this.#withRetries('Settle', request.reservationId, async () => {
      const response = await callUnary(this.#client.settle, this.#client, request, this.#callTimeoutMs);
      return { response, final: finalSettleResults.has(response.result) };
    });
  }

  /** Releases a reservation that reached no upstream, retrying failed calls; undefined when none got an answer. */
  async release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse | undefined> {
    return this.#withRetries('Release', request.reservationId, async () => {
      const response = await callUnary(this.#client.release, this.#client, request, this.#callTimeoutMs);
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

  /** Closes the channel. */
  close(): void {
    this.#client.close();
  }
}
