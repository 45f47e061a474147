import { AddressRefusedError, addressRefusedCode } from '@gateway/address-policy';
import type { UpstreamOutcome } from './upstream-outcome.ts';

// How a failed upstream call is classified, shared by the non-streaming and the streamed call:
// `unreachable` (nothing was sent) releases the Reserve, anything else settles it.

/** Error codes raised while connecting (DNS, TCP, TLS, the SSRF address policy): the request was never written. */
export const connectErrorCodes = new Set([
  addressRefusedCode,
  'UND_ERR_CONNECT_TIMEOUT', 'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'ERR_SSL_WRONG_VERSION_NUMBER',
]);
/** Error codes of undici's first-byte and idle timeouts. */
export const timeoutErrorCodes = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The first error code in an error's cause chain (at most 4 deep). */
export function errorCodeOf(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** The SSRF refusal in an error's cause chain, if that is what failed the call. */
function addressRefusalOf(error: unknown): AddressRefusedError | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    if (current instanceof AddressRefusedError) return current;
  }
  return undefined;
}

/**
 * Text of an error for logs: its code and class, never a URL with credentials or a body. An
 * SSRF refusal adds its own message (host, address, range: internal detail, no secret).
 */
export function reasonOf(error: unknown): string {
  const refusal = addressRefusalOf(error);
  if (refusal !== undefined) return `${refusal.name} ${refusal.code}: ${refusal.message}`;
  const code = errorCodeOf(error);
  const name = error instanceof Error ? error.name : typeof error;
  return code === undefined ? name : `${name} ${code}`;
}

/** Bytes of a non-2xx body read (and discarded) before its connection is cut instead, as undici's dump() does. */
export const discardedBodyBytes = 128 * 1024;

/** What a failed non-streaming call was, by the error undici reports (or the total timer). */
export function failedCallOutcome(error: unknown, totalTimedOut: boolean, totalTimeoutMs: number): UpstreamOutcome {
  if (totalTimedOut) return { kind: 'timeout', reason: `no complete answer within ${totalTimeoutMs} ms` };
  const code = errorCodeOf(error);
  if (code !== undefined && timeoutErrorCodes.has(code)) return { kind: 'timeout', reason: reasonOf(error) };
  if (code !== undefined && connectErrorCodes.has(code)) return { kind: 'unreachable', reason: reasonOf(error) };
  return { kind: 'failed', reason: reasonOf(error) };
}

/** Longest Retry-After taken from an upstream, ms (the router caps it further by PROXY_OUTLIER_MAX_EJECTION_MS). */
const maxRetryAfterMs = 3_600_000;

/**
 * An upstream's Retry-After (seconds, or an HTTP date) in ms, for a 429 or 503 only; undefined
 * when absent or unreadable. It only keeps the deployment from being tried (docs/proxy.md
 * "Routing"): it never reaches the client.
 */
export function retryAfterMsOf(statusCode: number, headers: Record<string, string | string[] | undefined> | undefined): number | undefined {
  if ((statusCode !== 429 && statusCode !== 503) || headers === undefined) return undefined;
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(value.trim())) ms = Number(value.trim()) * 1000;
  else {
    const at = Date.parse(value);
    if (Number.isNaN(at)) return undefined;
    ms = at - Date.now();
  }
  return ms > 0 ? Math.min(ms, maxRetryAfterMs) : undefined;
}
