import { ledgerV1 } from '@gateway/contracts';
import { errorCodeMetadataKey } from '@gateway/errors';
import { duplexStream, type DuplexStream } from '@gateway/grpc';
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';

/** One operation to send: exactly one of reserve, settle, release, checkpoint, acquire_grant, adjust_grant or settle_batch, and the request id to log. */
export type Operation = Omit<ledgerV1.OperationRequest, 'callId'>;

/** An open Operate stream and its operations in flight. */
interface OpenStream {
  stream: DuplexStream<ledgerV1.OperationResponse, ledgerV1.OperationRequest>;
  /** Cancels the call (close()). */
  cancel: AbortController;
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
 * the call's error, or UNAVAILABLE when the ledger ended it (the ledger answers each message at
 * most once, and every operation is idempotent on its reservation id, so the caller's retry is
 * safe). Answers are matched to operations by call id, in whatever order they come. Each
 * operation has its own deadline.
 */
export class LedgerOperationStream {
  readonly #client: ledgerV1.LedgerServiceClient;
  /** The open stream and its operations in flight (each stream has its own, so a late error of an old one fails nothing new). */
  #current: OpenStream | undefined;
  #nextCallId = 1n;
  #closed = false;
  /** Gets what the ledger pushes unasked (call id 0): grant recalls. */
  #onRecall: (recall: ledgerV1.GrantRecall) => void = () => {};
  /** Told when an open stream ends or breaks (not when close() ends it). */
  #onEnded: () => void = () => {};

  /** Uses the client's channel; opens nothing until the first operation. */
  constructor(client: ledgerV1.LedgerServiceClient) {
    this.#client = client;
  }

  /** Routes the ledger's pushed GrantRecall messages (call id 0, answering nothing) to `listener`. */
  onRecall(listener: (recall: ledgerV1.GrantRecall) => void): void {
    this.#onRecall = listener;
  }

  /**
   * Calls `listener` when a stream ends or breaks other than by close(): the credit grants
   * acquired on it are no longer to be carved from (the ledger closes them when it sees the
   * owner gone). The next operation opens a new stream.
   */
  onEnded(listener: () => void): void {
    this.#onEnded = listener;
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
      // Written at once, in order; a full buffer only delays the promise (the deadline still runs).
      // Not written means the call is over: its reader fails this operation with the rest.
      void stream.send({ ...operation, callId });
    });
  }

  /** Ends the stream; operations still in flight fail with UNAVAILABLE. */
  close(): void {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    if (current === undefined) return;
    failAll(current.pending, operationError(GrpcStatus.UNAVAILABLE, 'ledger client is closed'));
    current.cancel.abort();
  }

  #open(): OpenStream {
    if (this.#current !== undefined) return this.#current;
    const cancel = new AbortController();
    const stream = duplexStream(this.#client.operate(), { signal: cancel.signal });
    const current: OpenStream = { stream, cancel, pending: new Map() };
    this.#current = current;
    void this.#read(current);
    return current;
  }

  /** Resolves each answer's operation until the stream ends, then fails what is still in flight on it. */
  async #read(current: OpenStream): Promise<void> {
    let error: ServiceError;
    try {
      for await (const response of current.stream) {
        if (response.callId === 0n) {
          // A push, not an answer: call ids of operations start at 1.
          if (response.recall !== undefined) this.#onRecall(response.recall);
          continue;
        }
        const answered = current.pending.get(response.callId);
        if (answered === undefined) continue; // answered after its deadline: the caller has moved on
        current.pending.delete(response.callId);
        clearTimeout(answered.timer);
        answered.resolve(response);
      }
      // The ledger ended the stream (it is shutting down, having answered what it received), or
      // close() cancelled it: the next operation opens a new one.
      error = operationError(GrpcStatus.UNAVAILABLE, 'ledger ended the operation stream');
    } catch (thrown) {
      error = thrown as ServiceError;
    }
    const ended = this.#current === current;
    if (ended) this.#current = undefined;
    failAll(current.pending, error);
    if (ended) this.#onEnded();
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
