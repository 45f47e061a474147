import { GatewayError } from '@gateway/errors';

/**
 * An upstream call that produced no usable answer: what the transport reports (the same shapes
 * as its outcomes) plus an answer the adapter could not use. Everything but `unreachable` may
 * have reached the provider.
 */
export type UpstreamFailure =
  /** The connection could not be made; nothing was sent. */
  | { kind: 'unreachable'; reason: string }
  /** No first byte, a stalled body, or the total time ran out, after the request was sent. */
  | { kind: 'timeout'; reason: string }
  /** A non-2xx answer (its body is never read). */
  | { kind: 'http_error'; statusCode: number }
  /** Sent, but the answer was broken (reset, not JSON, too large). */
  | { kind: 'failed'; reason: string }
  /** A 2xx answer the adapter could not turn into a completion. */
  | { kind: 'unusable_answer' };

/** What becomes of the Reserve of a call that failed: freed, or settled at zero usage. */
type FailedCallMoney =
  /** The request certainly reached no upstream: nothing to bill (Release). */
  | { kind: 'release'; reason: string }
  /** It may have reached the provider: NOTHING_FREE wants one Settle, of zero usage since nothing was delivered. */
  | { kind: 'settle_nothing' };

/** The client's error for a failed call and what to do with its Reserve. */
export interface FailedCall {
  error: GatewayError;
  money: FailedCallMoney;
}

/**
 * The one table of upstream failures: upstream error -> the gateway's own 502/504 (the upstream's
 * status, headers and text go nowhere but the log), and whether the Reserve is released or settled.
 */
export function failedCall(failure: UpstreamFailure): FailedCall {
  switch (failure.kind) {
    case 'unreachable':
      return {
        error: new GatewayError('upstream_error', { internalMessage: `upstream unreachable: ${failure.reason}` }),
        money: { kind: 'release', reason: 'upstream_unreachable' },
      };
    case 'timeout':
      return { error: new GatewayError('upstream_timeout', { internalMessage: `upstream timeout: ${failure.reason}` }), money: { kind: 'settle_nothing' } };
    case 'http_error':
      return { error: new GatewayError('upstream_error', { internalMessage: `upstream answered HTTP ${failure.statusCode}` }), money: { kind: 'settle_nothing' } };
    case 'failed':
      return { error: new GatewayError('upstream_error', { internalMessage: `upstream call failed: ${failure.reason}` }), money: { kind: 'settle_nothing' } };
    case 'unusable_answer':
      return { error: new GatewayError('upstream_error', { internalMessage: 'upstream answer is not a usable completion' }), money: { kind: 'settle_nothing' } };
  }
}

/** How a started stream can end badly: cut by shutdown, or its upstream failed or stalled. */
export type StreamFailureEnding = 'shutdown' | 'upstream_failed' | 'upstream_timeout';

/**
 * The error of a stream that ended badly: an in-stream error event once frames went out, an
 * ordinary HTTP error before. Its money is always a Settle of what was delivered (NOTHING_FREE;
 * the stream meter says what that is).
 */
export function streamFailureError(ending: StreamFailureEnding, reason: string): GatewayError {
  if (ending === 'shutdown') return new GatewayError('service_unavailable', { internalMessage: 'stream cut by shutdown' });
  return new GatewayError(ending === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_error', { internalMessage: `upstream stream failed: ${reason}` });
}
