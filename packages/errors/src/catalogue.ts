import { status as GrpcStatus } from '@grpc/grpc-js';

/** The `error.type` values of Anthropic's error shape (its documented HTTP errors). */
export type AnthropicErrorType =
  | 'invalid_request_error' | 'authentication_error' | 'billing_error' | 'permission_error' | 'not_found_error'
  | 'request_too_large' | 'rate_limit_error' | 'api_error' | 'timeout_error' | 'overloaded_error';

/** One entry of the error catalogue: how an error code shows itself over HTTP and gRPC. */
export interface ErrorDefinition {
  /** HTTP status the code answers with. */
  readonly httpStatus: number;
  /** gRPC status code the code answers with. */
  readonly grpcStatus: GrpcStatus;
  /** OpenAI-style `error.type`. */
  readonly type: string;
  /** Anthropic-style `error.type`, for the routes that answer in Anthropic's error shape (`/v1/messages`). */
  readonly anthropicType: AnthropicErrorType;
  /** Message shown to callers when the thrower gives none; written by us, never upstream text. */
  readonly publicMessage: string;
  /** Whether a client may retry the same request unchanged and expect a different outcome. */
  readonly retryable: boolean;
}

/**
 * The one error catalogue of the gateway. Every error a caller can see has a code here; the
 * code string is what appears as `error.code` in HTTP bodies and in gRPC metadata.
 */
export const errorCatalogue = {
  invalid_request: {
    httpStatus: 400, grpcStatus: GrpcStatus.INVALID_ARGUMENT, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The request is invalid.', retryable: false,
  },
  invalid_json: {
    httpStatus: 400, grpcStatus: GrpcStatus.INVALID_ARGUMENT, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The request body is not valid JSON.', retryable: false,
  },
  request_too_large: {
    httpStatus: 413, grpcStatus: GrpcStatus.INVALID_ARGUMENT, type: 'invalid_request_error', anthropicType: 'request_too_large',
    publicMessage: 'The request body is too large.', retryable: false,
  },
  unsupported_media_type: {
    httpStatus: 415, grpcStatus: GrpcStatus.INVALID_ARGUMENT, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The request body uses an encoding or charset the gateway does not accept.', retryable: false,
  },
  headers_too_large: {
    httpStatus: 431, grpcStatus: GrpcStatus.INVALID_ARGUMENT, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The request headers are too large.', retryable: false,
  },
  request_timeout: {
    httpStatus: 408, grpcStatus: GrpcStatus.DEADLINE_EXCEEDED, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The request was not received in time.', retryable: true,
  },
  expectation_failed: {
    httpStatus: 417, grpcStatus: GrpcStatus.FAILED_PRECONDITION, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The Expect header can not be met; only 100-continue is supported.', retryable: false,
  },
  invalid_api_key: {
    httpStatus: 401, grpcStatus: GrpcStatus.UNAUTHENTICATED, type: 'authentication_error', anthropicType: 'authentication_error',
    publicMessage: 'Invalid API key.', retryable: false,
  },
  unauthenticated: {
    httpStatus: 401, grpcStatus: GrpcStatus.UNAUTHENTICATED, type: 'authentication_error', anthropicType: 'authentication_error',
    publicMessage: 'Missing or invalid bearer token.', retryable: false,
  },
  organisation_suspended: {
    httpStatus: 403, grpcStatus: GrpcStatus.PERMISSION_DENIED, type: 'permission_error', anthropicType: 'permission_error',
    publicMessage: 'The organisation is suspended.', retryable: false,
  },
  permission_denied: {
    httpStatus: 403, grpcStatus: GrpcStatus.PERMISSION_DENIED, type: 'permission_error', anthropicType: 'permission_error',
    publicMessage: 'This credential may not perform this operation.', retryable: false,
  },
  model_not_found: {
    httpStatus: 404, grpcStatus: GrpcStatus.NOT_FOUND, type: 'invalid_request_error', anthropicType: 'not_found_error',
    publicMessage: 'The model does not exist or you do not have access to it.', retryable: false,
  },
  not_found: {
    httpStatus: 404, grpcStatus: GrpcStatus.NOT_FOUND, type: 'invalid_request_error', anthropicType: 'not_found_error',
    publicMessage: 'Not found.', retryable: false,
  },
  conflict: {
    httpStatus: 409, grpcStatus: GrpcStatus.ALREADY_EXISTS, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'The request conflicts with the current state.', retryable: false,
  },
  idempotency_conflict: {
    httpStatus: 409, grpcStatus: GrpcStatus.ALREADY_EXISTS, type: 'invalid_request_error', anthropicType: 'invalid_request_error',
    publicMessage: 'This idempotency key was already used with a different request.', retryable: false,
  },
  insufficient_balance: {
    httpStatus: 402, grpcStatus: GrpcStatus.FAILED_PRECONDITION, type: 'billing_error', anthropicType: 'billing_error',
    publicMessage: 'Insufficient balance to reserve the cost of this request. Top up and try again.',
    retryable: false,
  },
  budget_exceeded: {
    httpStatus: 402, grpcStatus: GrpcStatus.FAILED_PRECONDITION, type: 'billing_error', anthropicType: 'billing_error',
    publicMessage: 'The project has reached its monthly budget.', retryable: false,
  },
  rate_limit_exceeded: {
    httpStatus: 429, grpcStatus: GrpcStatus.RESOURCE_EXHAUSTED, type: 'rate_limit_error', anthropicType: 'rate_limit_error',
    publicMessage: 'Rate limit exceeded', retryable: true,
  },
  upstream_error: {
    httpStatus: 502, grpcStatus: GrpcStatus.UNAVAILABLE, type: 'api_error', anthropicType: 'api_error',
    publicMessage: 'The model provider returned an error. Try again later.', retryable: true,
  },
  upstream_timeout: {
    httpStatus: 504, grpcStatus: GrpcStatus.DEADLINE_EXCEEDED, type: 'api_error', anthropicType: 'timeout_error',
    publicMessage: 'The model provider did not answer in time.', retryable: true,
  },
  service_unavailable: {
    httpStatus: 503, grpcStatus: GrpcStatus.UNAVAILABLE, type: 'api_error', anthropicType: 'overloaded_error',
    publicMessage: 'The gateway is temporarily unavailable. Try again shortly.', retryable: true,
  },
  internal_error: {
    httpStatus: 500, grpcStatus: GrpcStatus.INTERNAL, type: 'api_error', anthropicType: 'api_error',
    publicMessage: 'The gateway encountered an internal error.', retryable: true,
  },
} as const satisfies Record<string, ErrorDefinition>;

/** A code of the error catalogue, e.g. `invalid_api_key`. */
export type ErrorCode = keyof typeof errorCatalogue;

/** Whether a string is a code of the catalogue (used when decoding errors from another service). */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(errorCatalogue, value);
}
