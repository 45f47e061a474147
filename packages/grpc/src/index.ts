import {
  Server, Metadata,
  type CallOptions, type ClientUnaryCall, type ServerUnaryCall, type ServiceError, type sendUnaryData,
} from '@grpc/grpc-js';
import type { Logger } from '@gateway/logger';
import { reportCallFailure } from './call-failure.ts';
import { serverCredentials, serverOptions, type GrpcTransportSecurity } from './grpc-tls.ts';

export { reportCallFailure } from './call-failure.ts';
export {
  duplexStream, type DuplexCallStatus, type DuplexStream, type DuplexStreamOptions, type ServerDuplexStreamHandle,
} from './duplex-stream.ts';
export {
  certificateExpiries, certificateExpiryRefresh, channelCredentials, checkGrpcTlsEnv, clientChannelOptions, closeTransportSecurity, grpcTlsEnv, grpcTransportSecurity,
  serverCredentials, serverOptions, type CertificateExpiryGauge, type CertificateUse, type GrpcTlsConfig, type GrpcTransportSecurity,
} from './grpc-tls.ts';
export {
  defaultCertificatePollIntervalMs, fixedCertificates, inspectCertificates, watchCertificateFiles,
  type CertificateFilePaths, type LoadedCertificates, type ServiceCertificates, type ServicePems, type WatchCertificateFilesOptions,
} from './service-certificates.ts';
export {
  authorizationError, authorizeService, callerRole, identityTrustDomain, identityUri, roleOfCertificate, serviceRoles,
  type AuthorizationOptions, type MethodRoles, type ServiceRole,
} from './service-identity.ts';
export {
  certificateNotAfter, createCertificateAuthority, ensureLocalPki, issueCertificate,
  type LeafCertificateRequest, type LocalPki, type LocalPkiOptions, type PemKeyPair, type ServiceTlsFiles,
} from './local-pki.ts';

/** A gRPC server with the keepalive settings that match every internal client (serverOptions). */
export function createGrpcServer(): Server {
  return new Server(serverOptions);
}

/**
 * The address grpc-js binds for host and port: an IPv6 literal (a pod IP in an IPv6 cluster,
 * BIND_HOST from the downward API) needs brackets, or `::1:0` reads as one address with no port.
 */
export function grpcBindAddress(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Starts a gRPC server on host:port (0 for a free port) with the service's transport security
 * (mTLS requiring a client certificate, or plaintext under GRPC_INSECURE) and resolves with the
 * bound port.
 */
export function startGrpcServer(server: Server, host: string, port: number, security: GrpcTransportSecurity): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(grpcBindAddress(host, port), serverCredentials(security), (error, boundPort) => {
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

export { Server, Metadata };
