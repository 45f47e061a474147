import { ledgerV1 } from '@gateway/contracts';
import { errorCodeMetadataKey } from '@gateway/errors';
import { Metadata, status as GrpcStatus, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';

/** One operation to send: exactly one of reserve, settle, release or checkpoint, and the request id to log. */
export type Operation = Omit<ledgerV1.OperationRequest, 'callId'>;

/** An open Operate stream and its operations in flight. */
interface OpenStream {
  stream: ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>;
  pending: Map<bigint, Pending>;
}

/** An operation sent and not yet answered. */
interface Pending {
  resolve: (response: ledgerV1.OperationResponse) => void;
  reject: (error: ServiceError) => void;
  timer: NodeJS.Timeout;
}

/** A grpc-js-shaped call error, so callers map it exactly as a failed unary call (fromGrpcError). */
export function operationError(code: GrpcStatus, details: string, errorCode?: string): ServiceError {
  const metadata = new Metadata();
  if (errorCode !== undefined && errorCode !== '') metadata.set(errorCodeMetadataKey, errorCode);
  return Object.assign(new Error(`${code} ${GrpcStatus[code] ?? 'UNKNOWN'}: ${details}`), { code, details, metadata });
}

/**
 * Reserve, Settle, Release and Checkpoint as messages on one long-lived Operate stream to the
 * ledger (a message costs a fraction of a unary call's setup; docs/proxy.md). The stream opens on
 * first use and again after it ends or breaks; operations in flight when it breaks fail with
 * UNAVAILABLE (the ledger answers each message at most once, and every operation is idempotent
 * on its reservation id, so the caller's retry is safe). Each operation has its own deadline.
 * A ledger that does not know Operate answers the stream UNIMPLEMENTED: then `unsupported`
 * turns true and the caller uses unary calls from then on.
 */
export class LedgerOperationStream {
  readonly #client: ledgerV1.LedgerServiceClient;
  /** The open stream and its operations in flight (each stream has its own, so a late error of an old one fails nothing new). */
  #current: OpenStream | undefined;
  #nextCallId = 1n;
  #unsupported = false;
  #closed = false;

  /** Uses the client's channel; opens nothing until the first operation. */
  constructor(client: ledgerV1.LedgerServiceClient) {
    this.#client = client;
  }

  /** True once the ledger answered the stream UNIMPLEMENTED (an older ledger): use unary calls. */
  get unsupported(): boolean {
    return this.#unsupported;
  }

  /** Sends one operation; resolves with its answer, or rejects with a call error (UNAVAILABLE, DEADLINE_EXCEEDED, or the ledger's own). */
  send(operation: Operation, deadlineMs: number): Promise<ledgerV1.OperationResponse> {
    if (this.#closed) return Promise.reject(operationError(GrpcStatus.UNAVAILABLE, 'ledger client is closed'));
    const { stream, pending } = this.#open();
    const callId = this.#nextCallId;
    this.#nextCallId += 1n;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (pending.delete(callId)) reject(operationError(GrpcStatus.DEADLINE_EXCEEDED, 'ledger operation deadline exceeded'));
      }, deadlineMs);
      pending.set(callId, { resolve, reject, timer });
      stream.write({ ...operation, callId });
    });
  }

  /** Ends the stream; operations still in flight fail with UNAVAILABLE. */
  close(): void {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    if (current === undefined) return;
    failAll(current.pending, operationError(GrpcStatus.UNAVAILABLE, 'ledger client is closed'));
    current.stream.cancel();
  }

  #open(): OpenStream {
    if (this.#current !== undefined) return this.#current;
    const stream = this.#client.operate();
    const pending = new Map<bigint, Pending>();
    const current: OpenStream = { stream, pending };
    this.#current = current;
    const ended = (error: ServiceError) => {
      if (this.#current === current) this.#current = undefined;
      failAll(pending, error);
    };
    stream.on('data', (response: ledgerV1.OperationResponse) => {
      const answered = pending.get(response.callId);
      if (answered === undefined) return; // answered after its deadline: the caller has moved on
      pending.delete(response.callId);
      clearTimeout(answered.timer);
      answered.resolve(response);
    });
    stream.on('error', (error: ServiceError) => {
      if (error.code === GrpcStatus.UNIMPLEMENTED) this.#unsupported = true;
      ended(error);
    });
    // The ledger ended the stream (it is shutting down, having answered what it received):
    // the next operation opens a new one.
    stream.on('end', () => ended(operationError(GrpcStatus.UNAVAILABLE, 'ledger ended the operation stream')));
    return current;
  }
}

/** Fails every operation in flight on a stream with one error. */
function failAll(pending: Map<bigint, Pending>, error: ServiceError): void {
  for (const [callId, operation] of pending) {
    pending.delete(callId);
    clearTimeout(operation.timer);
    operation.reject(error);
  }
}
