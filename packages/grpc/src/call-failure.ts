import { toGrpcError, toGatewayError, type ErrorCode, type GrpcErrorPayload } from '@gateway/errors';
import type { Logger } from '@gateway/logger';

/**
 * The one way a failed call is reported: logs the full error (error level for an internal
 * error, else warn, with `fields` beside it) and returns its catalogue code and the gRPC status
 * to answer with, which carries no internal text. Unary calls and stream messages alike.
 */
export function reportCallFailure(
  logger: Logger, method: string, error: unknown, fields: Record<string, unknown> = {},
): { errorCode: ErrorCode; status: GrpcErrorPayload } {
  const gatewayError = toGatewayError(error);
  const level = gatewayError.code === 'internal_error' ? 'error' : 'warn';
  logger[level]({ err: error, method, ...fields, code: gatewayError.code }, 'gRPC call failed');
  return { errorCode: gatewayError.code, status: toGrpcError(gatewayError) };
}
