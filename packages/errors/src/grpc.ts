import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { errorCatalogue, isErrorCode } from './catalogue.ts';
import { GatewayError, toGatewayError } from './gateway-error.ts';

/** Metadata key carrying the catalogue code across a gRPC call. */
export const errorCodeMetadataKey = 'x-gateway-error-code';

/** The shape grpc-js accepts as a call's error: a status, a public message and metadata. */
export interface GrpcErrorPayload {
  code: GrpcStatus;
  details: string;
  metadata: Metadata;
}

/**
 * The one mapping from any thrown error to a gRPC status. The catalogue code travels in
 * metadata so the caller can rebuild the same GatewayError; unknown errors say nothing internal.
 */
export function toGrpcError(error: unknown): GrpcErrorPayload {
  const gatewayError = toGatewayError(error);
  const metadata = new Metadata();
  metadata.set(errorCodeMetadataKey, gatewayError.code);
  return {
    code: errorCatalogue[gatewayError.code].grpcStatus,
    details: gatewayError.publicMessage,
    metadata,
  };
}

/** Whether a value is a grpc-js call error (has a numeric status code and metadata). */
function isServiceError(error: unknown): error is ServiceError {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'number'
    && 'metadata' in error;
}

/**
 * Rebuilds a GatewayError from an error a gRPC call returned. A peer that is down, slow or
 * broken becomes `service_unavailable`: the caller's own callers learn only that it may retry.
 */
export function fromGrpcError(error: unknown): GatewayError {
  if (!isServiceError(error)) return toGatewayError(error);
  const [code] = error.metadata.get(errorCodeMetadataKey);
  if (typeof code === 'string' && isErrorCode(code) && code !== 'internal_error') {
    return new GatewayError(code, { publicMessage: error.details, internalMessage: `gRPC: ${error.message}`, cause: error });
  }
  return new GatewayError('service_unavailable', { internalMessage: `gRPC: ${error.message}`, cause: error });
}
