import { ledgerV1 } from '@gateway/contracts';
import { fromGrpcError } from '@gateway/errors';
import { callUnary, channelCredentials, clientChannelOptions, type GrpcTransportSecurity } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { connectivityState as ConnectivityState, status as GrpcStatus } from '@grpc/grpc-js';
import { LedgerOperationStream, operationError } from './operation-stream.ts';

/** Options of the ledger client. */
export interface LedgerClientOptions {
  /** host:port of the ledger's gRPC server. */
  address: string;
  /** Deadline of each call, ms. */
  callTimeoutMs: number;
  logger: Logger;
  /** The proxy's certificate (its identity at the ledger) and the CA, or plaintext under GRPC_INSECURE. */
  security: GrpcTransportSecurity;
}

/** What the proxy's channel to the ledger is doing, for /readyz's body. */
export type LedgerChannelState = 'up' | 'connecting' | 'idle' | 'down';

/** The hot-path operations the Operate stream carries. */
type OperationKind = 'reserve' | 'settle' | 'release' | 'checkpoint';

/**
 * The proxy's side of the ledger: one attempt of each hot-path call. Reserve maps a failed call
 * to `service_unavailable`; Settle and Release throw the call's error, and the settle outbox
 * (settle-outbox.ts) repeats them until the ledger answers. All four travel as messages on one
 * Operate stream (unary calls for a ledger without it).
 */

export class LedgerClient {
  readonly #client: ledgerV1.LedgerServiceClient;
  readonly #operations: LedgerOperationStream;
  readonly #callTimeoutMs: number;
  readonly #logger: Logger;

  /** Creates the channel; it connects on first use and reconnects by itself. */
  constructor(options: LedgerClientOptions) {
    // Capped reconnect backoff and keepalive (clientChannelOptions): a ledger back after a restart is found within ~2 s.
    this.#client = new ledgerV1.LedgerServiceClient(options.address, channelCredentials(options.security), clientChannelOptions);
    this.#operations = new LedgerOperationStream(this.#client);
    this.#callTimeoutMs = options.callTimeoutMs;
    this.#logger = options.logger;
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

  /** Settles a reservation, once; throws the call's error (the outbox sends it again). */
  settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse> {
    return this.#operate('settle', request, () => callUnary(this.#client.settle, this.#client, request, this.#callTimeoutMs));
  }

  /** Releases a reservation, once; throws the call's error (the outbox sends it again). */
  release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse> {
    return this.#operate('release', request, () => callUnary(this.#client.release, this.#client, request, this.#callTimeoutMs));
  }

  /** Ends the operation stream and closes the channel. */
  /** The state of the channel to the ledger (no connection attempt is started by asking). */
  channelState(): LedgerChannelState {
    const state = this.#client.getChannel().getConnectivityState(false);
    if (state === ConnectivityState.READY) return 'up';
    if (state === ConnectivityState.CONNECTING) return 'connecting';
    if (state === ConnectivityState.IDLE) return 'idle';
    return 'down';
  }

  close(): void {
    this.#operations.close();
    this.#client.close();
  }
}
