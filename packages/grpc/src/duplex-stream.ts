import { status as GrpcStatus, type ClientDuplexStream, type ServerDuplexStream } from '@grpc/grpc-js';

/** A status a server ends its side of a bidirectional call with: the gRPC code and the details its caller reads. */
export interface DuplexCallStatus {
  code: GrpcStatus;
  details: string;
}

/** Options of duplexStream. */
export interface DuplexStreamOptions {
  /**
   * Aborting it cancels the call and ends the iteration without an error: a client cancels
   * (the server sees CANCELLED), a server ends the call with CANCELLED.
   */
  signal?: AbortSignal;
}

/**
 * One side of a bidirectional gRPC call: iterate it for what the peer sends, `send` and `end`
 * for what this side sends. The iteration pulls one message at a time (grpc-js reads the next
 * only when asked, so a slow consumer slows the peer through HTTP/2 flow control); it ends when
 * the peer half-closes, the call is cancelled or aborted, or this server side ended the call,
 * and throws the call's error (after the messages that arrived before it). Only one loop may
 * iterate it; leaving the loop early stops reading but does not cancel the call.
 */
export interface DuplexStream<In, Out> extends AsyncIterable<In> {
  /**
   * Writes one message at once (so messages go out in the order of the calls), and resolves
   * true when the call can take more (after 'drain' when its buffer is full), or false when the
   * call is over: not written, or written and perhaps never delivered.
   */
  send(message: Out): Promise<boolean>;
  /** This side is done sending: a client half-closes; a server ends the call with an OK status once its writes are out. */
  end(): void;
  /** True while `send` can still write: the call is not over and this side has not ended. */
  readonly writable: boolean;
}

/** The server side of a bidirectional call, which alone can end the call with an error status. */
export interface ServerDuplexStreamHandle<In, Out> extends DuplexStream<In, Out> {
  /** Ends the call with this (non-OK) status, after the writes already made; the iteration ends. */
  fail(status: DuplexCallStatus): void;
  /** True once the client went away (cancelled, or its connection broke) before the call ended. */
  readonly cancelled: boolean;
}

/** The readable and writable surface of a grpc-js duplex call (either side) that the wrapper uses. */
interface DuplexCall<In, Out> {
  read(): In | null;
  write(message: Out): boolean;
  end(): unknown;
  emit(event: 'error', status: DuplexCallStatus): boolean;
  on(event: string, listener: (...args: never[]) => void): unknown;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  readonly writableNeedDrain: boolean;
}

/** Wraps the client side of a bidirectional call (`client.method()`): messages from the server in, to the server out. */
export function duplexStream<Out, In>(call: ClientDuplexStream<Out, In>, options?: DuplexStreamOptions): DuplexStream<In, Out>;
/** Wraps the server side of a bidirectional call (the handler's argument): messages from the client in, to the client out. */
export function duplexStream<In, Out>(call: ServerDuplexStream<In, Out>, options?: DuplexStreamOptions): ServerDuplexStreamHandle<In, Out>;
export function duplexStream<In, Out>(
  call: ClientDuplexStream<Out, In> | ServerDuplexStream<In, Out>, options: DuplexStreamOptions = {},
): DuplexStream<In, Out> | ServerDuplexStreamHandle<In, Out> {
  return 'cancel' in call && typeof call.cancel === 'function'
    ? wrap<In, Out>(call as unknown as DuplexCall<In, Out>, { kind: 'client', cancel: () => call.cancel() }, options)
    : wrap<In, Out>(call as unknown as DuplexCall<In, Out>, { kind: 'server', isCancelled: () => (call as ServerDuplexStream<In, Out>).cancelled }, options);
}

/** What differs between the two sides. */
type Side = { kind: 'client'; cancel: () => void } | { kind: 'server'; isCancelled: () => boolean };

function wrap<In, Out>(call: DuplexCall<In, Out>, side: Side, options: DuplexStreamOptions): ServerDuplexStreamHandle<In, Out> {
  /** The call's error, thrown once the messages that arrived before it are consumed. */
  let callError: Error | undefined;
  let errorThrown = false;
  /** The peer half-closed (client side: the call finished) and every message it sent was pushed. */
  let readEnded = false;
  /** The call is finished: status received (client), status sent or client gone (server), or destroyed. */
  let over = false;
  /** This side ended or failed the call, or the signal aborted it: the iteration ends quietly. */
  let endedHere = false;
  let abortedHere = false;
  let iterating = false;
  let wakeReader: (() => void) | undefined;
  const drainWaiters = new Set<() => void>();

  const wake = () => {
    const reader = wakeReader;
    wakeReader = undefined;
    reader?.();
    for (const waiter of [...drainWaiters]) waiter();
  };
  const finish = () => {
    over = true;
    options.signal?.removeEventListener('abort', abort);
    wake();
  };

  const cancelled = () => side.kind === 'server' && side.isCancelled();
  const writable = () => !over && !endedHere && !abortedHere && !cancelled() && !call.destroyed && !call.writableEnded;

  call.on('readable', wake);
  call.on('end', () => { readEnded = true; wake(); });
  call.on('drain', wake);
  // A listener must always be attached: an 'error' without one would crash the process.
  call.on('error', (error: Error) => {
    // Our own fail() and cancel() come back as errors: the caller asked for them.
    if (!abortedHere && !endedHere) callError ??= error;
    if (side.kind === 'client') finish();
    else wake();
  });
  call.on('close', finish);
  if (side.kind === 'client') {
    call.on('status', finish);
  } else {
    call.on('cancelled', finish);
    // The status went out (end or fail): nothing more can be sent or answered.
    call.on('finish', finish);
  }

  function abort(): void {
    if (over || abortedHere) return;
    if (side.kind === 'server') fail({ code: GrpcStatus.CANCELLED, details: 'Cancelled by the server' });
    abortedHere = true;
    if (side.kind === 'client') {
      side.cancel();
      finish();
    }
    wake();
  }

  function fail(status: DuplexCallStatus): void {
    if (side.kind !== 'server' || !writable()) return;
    endedHere = true;
    // grpc-js sends an emitted error object as the call's status (after the writes already made).
    call.emit('error', status);
    wake();
  }

  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener('abort', abort, { once: true });

  const iterator: AsyncIterator<In> = {
    async next(): Promise<IteratorResult<In>> {
      for (;;) {
        if (abortedHere || errorThrown) return { done: true, value: undefined };
        // A server that ended the call cannot answer what is still buffered.
        if (side.kind === 'server' && (endedHere || over)) return { done: true, value: undefined };
        const message = call.destroyed ? null : call.read();
        if (message !== null) return { done: false, value: message };
        if (callError !== undefined) {
          errorThrown = true;
          throw callError;
        }
        if (readEnded || call.destroyed || (over && side.kind === 'server')) return { done: true, value: undefined };
        await new Promise<void>((resolve) => { wakeReader = resolve; });
      }
    },
    async return(): Promise<IteratorResult<In>> {
      return { done: true, value: undefined };
    },
  };

  return {
    [Symbol.asyncIterator]() {
      if (iterating) throw new Error('a duplex stream is iterated by one loop only');
      iterating = true;
      return iterator;
    },

    send(message: Out): Promise<boolean> {
      if (!writable()) return Promise.resolve(false);
      let fits: boolean;
      try {
        fits = call.write(message);
      } catch {
        // The call went away between the check and the write.
        return Promise.resolve(false);
      }
      if (fits) return Promise.resolve(true);
      return new Promise((resolve) => {
        const check = () => {
          if (over || call.destroyed) {
            drainWaiters.delete(check);
            resolve(false);
          } else if (!call.writableNeedDrain) {
            drainWaiters.delete(check);
            resolve(true);
          }
        };
        drainWaiters.add(check);
      });
    },

    end(): void {
      if (!writable()) return;
      // A client half-closes and still reads the server's answers; a server's end finishes the call.
      if (side.kind === 'server') endedHere = true;
      call.end();
      wake();
    },

    fail,

    get writable() {
      return writable();
    },

    get cancelled() {
      return cancelled();
    },
  };
}
