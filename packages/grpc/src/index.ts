import {
  Server, ServerCredentials, credentials, Metadata,
  type CallOptions, type ChannelCredentials, type ClientUnaryCall, type ServerUnaryCall, type ServiceError, type sendUnaryData,
} from '@grpc/grpc-js';
import { toGrpcError, toGatewayError, type ErrorCode, type GrpcErrorPayload } from '@gateway/errors';
import type { Logger } from '@gateway/logger';

/** Starts a gRPC server on host:port (0 for a free port) and resolves with the bound port. */
export function startGrpcServer(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (error, boundPort) => {
      if (error) reject(error);
      else resolve(boundPort);
    });
  });
}

/** Stops a gRPC server: lets in-flight calls finish for up to graceMs, then cuts the rest. */
export function stopGrpcServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { server.forceShutdown(); resolve(); }, graceMs);
    timer.unref();
    server.tryShutdown(() => { clearTimeout(timer); resolve(); });
  });
}

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

/**
 * Adapts an async handler to grpc-js's callback form. Whatever it throws goes through the one
 * gRPC error mapping (reportCallFailure), so no internal text reaches the caller; the full
 * error is logged.
 */
export function unaryHandler<Req, Res>(
  logger: Logger,
  method: string,
  handler: (request: Req, metadata: Metadata) => Promise<Res>,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    handler(call.request, call.metadata).then(
      (response) => callback(null, response),
      (error: unknown) => callback(reportCallFailure(logger, method, error).status),
    );
  };
}

/** The callback-style unary method shape ts-proto generates on clients. */
type UnaryMethod<Req, Res> = (
  request: Req, metadata: Metadata, options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

/** Calls a generated unary client method as a promise, with a deadline in milliseconds. */
export function callUnary<Req, Res>(
  method: UnaryMethod<Req, Res>,
  thisArg: object,
  request: Req,
  deadlineMs: number,
  metadata: Metadata = new Metadata(),
): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(thisArg, request, metadata, { deadline: Date.now() + deadlineMs }, (error, response) => {
      if (error) reject(error);
      else resolve(response);
    });
  });
}

/** Plain-text channel credentials for in-cluster calls (TLS is terminated by the mesh; see docs/deploy.md). */
export function insecureChannel(): ChannelCredentials {
  return credentials.createInsecure();
}

export { Server, Metadata };
